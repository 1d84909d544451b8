// The parts of HTML data serving a process builds once (main.ts, the tests' ingress, the bench): the
// store, the read cache, live updates (started: its LISTEN connection turns the cache on) and the
// client. `rates` overrides the per-address limits (the bench measures without them).
import type { Db } from '../../lib/db/connection.js';
import { DataStore } from '../../lib/html-data/store.js';
import type { Logger } from '../../lib/logger.js';
import { DataClient } from './client.js';
import { LiveUpdates } from './live.js';
import { dataRates, RateLimiter, type Rate } from './rate.js';
import { ReadCache } from './read-cache.js';
import type { DataParts } from './routes.js';

export async function startDataParts(
  db: Db,
  databaseUrl: string,
  log: Logger,
  rates: { read: Rate; write: Rate } = dataRates,
): Promise<DataParts> {
  const store = new DataStore(db);
  const cache = new ReadCache();
  const live = new LiveUpdates(store, databaseUrl, log, cache);
  await live.start();
  return {
    store,
    cache,
    live,
    rates: { read: new RateLimiter(rates.read), write: new RateLimiter(rates.write) },
    client: await DataClient.load(),
  };
}
