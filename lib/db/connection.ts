// The one database access layer: every component gets its knex instance here.
import knexFactory, { type Knex } from 'knex';
import type { Logger } from '../logger.js';

export type Db = Knex;

/**
 * How long a query waits for a connection before failing. Short: while PostgreSQL is away a
 * request should be answered 503 within seconds (and retried by its client), not hang a minute.
 */
export const acquireTimeoutMs = 5000;

/**
 * No query of the platform takes this long; one that does is on a connection whose server went
 * away without the socket saying so (a crash mid-query), and must fail rather than hang its caller.
 */
export const queryTimeoutMs = 15_000;

export function connect(databaseUrl: string, opts: { poolMax?: number; acquireTimeoutMs?: number; log?: Logger } = {}): Db {
  const { log } = opts;
  return knexFactory({
    client: 'pg',
    // knex's own messages (a pooled connection the server closed, a connection that could not be
    // opened) into the component's log as JSON, not as plain lines on stdout, one per pooled
    // connection each time PostgreSQL restarts; nowhere without a log (tests, tools). The pool
    // replaces such a connection by itself, and a query that fails for it is logged by its caller.
    log: {
      warn: (message: string) => log?.warn({ knex: message }, 'Database client warning'),
      error: (message: string) => log?.error({ knex: message }, 'Database client error'),
      deprecate: (method: string, alternative: string) =>
        log?.warn({ knex: `${method} is deprecated: ${alternative}` }, 'Database client warning'),
      debug: (message: string) => log?.debug({ knex: message }, 'Database client'),
    },
    // TCP keep-alive finds a dead server on an idle pooled connection; the query timeout, on a busy one.
    connection: { connectionString: databaseUrl, keepAlive: true, query_timeout: queryTimeoutMs },
    pool: { min: 0, max: opts.poolMax ?? 10 },
    acquireConnectionTimeout: opts.acquireTimeoutMs ?? acquireTimeoutMs,
  });
}

/** PostgreSQL error classes and socket errors that mean "not reachable now", not "the query is wrong". */
const unreachableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08006',
]);

/** Whether `err` says the database cannot be reached right now (a retry later may succeed). */
export function databaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && unreachableCodes.has(e.code)) return true;
  if (e.name === 'KnexTimeoutError') return true;
  return (
    typeof e.message === 'string' && /Connection terminated|connection is closed|Client has encountered a connection error/i.test(e.message)
  );
}
