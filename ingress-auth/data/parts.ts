// The parts of HTML data serving a process builds once (main.ts, the tests' ingress, the bench): the
// store, the read cache, live updates (started: its LISTEN connection turns the cache on), the usage
// it records and the client. `rates` overrides the per-address limits (the bench measures without them).
import type { Db } from '../../lib/db/connection.js';
import { DataStore } from '../../lib/html-data/store.js';
import type { Logger } from '../../lib/logger.js';
import { DataClient } from './client.js';
import { LiveUpdates } from './live.js';
import { dataRates, RateLimiter, type Rate } from './rate.js';
import { ReadCache } from './read-cache.js';
import type { DataParts } from './routes.js';
import { DataUsage } from './usage.js';

export async function startDataParts(
  db: Db,
  databaseUrl: string,
  log: Logger,
  rates: { read: Rate; write: Rate } = dataRates,
): Promise<DataParts & { stop(): Promise<void> }> {
  const store = new DataStore(db);
  const cache = new ReadCache();
  const live = new LiveUpdates(store, databaseUrl, log, cache);
  await live.start();
  const usage = new DataUsage(db, store, log);
  usage.start();
  return {
    store,
    cache,
    live,
    usage,
    rates: { read: new RateLimiter(rates.read), write: new RateLimiter(rates.write) },
    client: await DataClient.load(),
    // Streams first (they never end on their own), then what was counted.
    stop: async () => {
      await live.stop();
      await usage.stop();
    },
  };
}
