// The one database access layer: every component gets its knex instance here.
import knexFactory, { type Knex } from 'knex';

export type Db = Knex;

export function connect(databaseUrl: string, opts: { poolMax?: number } = {}): Db {
  return knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: opts.poolMax ?? 10 },
  });
}
