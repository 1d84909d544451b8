import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Db } from '../../lib/db/connection.js';
import { migrateDownAll, migrateLatest, migrationNames } from '../../lib/db/migrate.js';
import { freshDatabase } from '../support/db.js';

async function tables(db: Db): Promise<string[]> {
  const rows = await db('information_schema.tables')
    .where({ table_schema: 'public' })
    .whereNot('table_name', 'like', 'knex_%')
    .select<Array<{ table_name: string }>>('table_name');
  // Sorted here: the database's collation would order `account_x` and `accounts` its own way.
  return rows.map((r) => r.table_name).sort();
}

/** Every table the migrations make, by name. */
const schema = [
  'account_domains',
  'account_identities',
  'account_passkey_challenges',
  'account_passkeys',
  'accounts',
  'api_tokens',
  'app_domains',
  'app_repositories',
  'app_request_metrics',
  'app_sessions',
  'app_users',
  'artifact_holds',
  'assertion_keys',
  'auth_flows',
  'auth_links',
  'auth_rate',
  'auth_recipients',
  'builds',
  'certificate_orders',
  'cli_logins',
  'console_idp_flows',
  'console_sign_in_codes',
  'database_backups',
  'deploys',
  'domain_orders',
  'domain_tokens',
  'event_horizons',
  'events',
  'git_deliveries',
  'hostnames',
  'html_data_changes',
  'html_data_records',
  'html_data_totals',
  'mail_outbox',
  'passkey_challenges',
  'passkey_credentials',
  'tls_ticket_keys',
  'token_keys',
  'token_revocations',
  'usage_records',
  'webhook_attempts',
  'webhook_deliveries',
  'webhooks',
];

describe('database migrations (real PostgreSQL)', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  before(async () => {
    fresh = await freshDatabase();
  });
  after(async () => {
    await fresh?.dispose();
  });

  it('apply every migration on an empty database, then nothing on a second run', async () => {
    assert.deepEqual(await migrateLatest(fresh.db), migrationNames);
    assert.deepEqual(await tables(fresh.db), schema);
    assert.deepEqual(await migrateLatest(fresh.db), []);
  });

  it('create working tables: events reference accounts and get increasing ids', async () => {
    await fresh.db('accounts').insert({ id: 'acct_1', email: 'a@example.test', name: 'A', namespace: 'acct-1' });
    const ids = [];
    for (const type of ['app.created', 'app.deployed']) {
      const [row] = await fresh.db('events').insert({ account_id: 'acct_1', type }).returning<Array<{ id: string }>>('id');
      ids.push(Number(row?.id));
    }
    assert.ok(ids[1]! > ids[0]!);
    await assert.rejects(fresh.db('events').insert({ account_id: 'nobody', type: 'x' }), /foreign key/);
    await assert.rejects(fresh.db('accounts').insert({ id: 'acct_2', email: 'a@example.test', name: 'B', namespace: 'acct-2' }), /unique/);
  });

  it('revert cleanly down to an empty schema and apply again', async () => {
    assert.deepEqual(await migrateDownAll(fresh.db), [...migrationNames].reverse());
    assert.deepEqual(await tables(fresh.db), []);
    assert.deepEqual(await migrateLatest(fresh.db), migrationNames);
    assert.deepEqual(await tables(fresh.db), schema);
  });
});

describe('migrations started by several replicas at once on a new database', () => {
  const made: Array<{ db: Db; dispose: () => Promise<void> }> = [];
  after(async () => {
    for (const m of made) await m.dispose();
  });

  it('leave one lock row, however many start together; every replica ends migrated or told the lock is taken, and starts after', async () => {
    const fresh = await freshDatabase();
    made.push(fresh);
    const replicas = [fresh.db, ...[1, 2, 3].map(() => connect(fresh.url))];
    made.push(...replicas.slice(1).map((db) => ({ db, dispose: () => db.destroy() })));
    const outcomes = await Promise.allSettled(replicas.map((db) => migrateLatest(db)));
    for (const o of outcomes)
      if (o.status === 'rejected')
        assert.match(String((o.reason as Error).message), /already locked/, 'a replica that lost the race is told so');
    assert.ok(outcomes.some((o) => o.status === 'fulfilled'));
    assert.deepEqual(await fresh.db('knex_migrations_lock').select('index', 'is_locked'), [{ index: 1, is_locked: 0 }]);
    // A replica restarted after the race migrates (nothing left to do) rather than failing for ever.
    assert.deepEqual(await migrateLatest(replicas[3]!), []);
    assert.deepEqual(await tables(fresh.db), schema);
  });

  it('repair a lock table the race left with two rows (a database made before the fix)', async () => {
    const fresh = await freshDatabase();
    made.push(fresh);
    await migrateLatest(fresh.db);
    await fresh.db('knex_migrations_lock').insert({ is_locked: 0 });
    assert.equal((await fresh.db('knex_migrations_lock').select()).length, 2);
    assert.deepEqual(await migrateLatest(fresh.db), []);
    assert.equal((await fresh.db('knex_migrations_lock').select()).length, 1);
  });
});
