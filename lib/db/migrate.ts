// Migrations are compiled with the code and listed here in order, rather than discovered on disk,
// so what runs is exactly what was type-checked, with no file-extension or path guessing.
import type { Knex } from 'knex';
import type { Db } from './connection.js';
import * as m0001 from './migrations/0001_accounts.js';
import * as m0002 from './migrations/0002_events.js';
import * as m0003 from './migrations/0003_api_tokens.js';
import * as m0004 from './migrations/0004_webhooks.js';
import * as m0005 from './migrations/0005_usage.js';
import * as m0006 from './migrations/0006_deploys.js';
import * as m0007 from './migrations/0007_app_request_metrics.js';
import * as m0008 from './migrations/0008_assertion_keys.js';
import * as m0009 from './migrations/0009_app_auth.js';
import * as m0010 from './migrations/0010_mail_outbox.js';
import * as m0011 from './migrations/0011_passkeys.js';
import * as m0012 from './migrations/0012_token_lineage.js';
import * as m0013 from './migrations/0013_hostnames.js';
import * as m0014 from './migrations/0014_usage_once.js';
import * as m0015 from './migrations/0015_webhook_deliveries.js';
import * as m0016 from './migrations/0016_usage_open.js';
import * as m0017 from './migrations/0017_event_retention.js';
import * as m0018 from './migrations/0018_database_backups.js';
import * as m0019 from './migrations/0019_builds.js';
import * as m0020 from './migrations/0020_app_repositories.js';
import * as m0021 from './migrations/0021_artifact_holds.js';
import * as m0022 from './migrations/0022_app_domains.js';
import * as m0023 from './migrations/0023_certificate_orders.js';
import * as m0024 from './migrations/0024_tls_ticket_keys.js';
import * as m0025 from './migrations/0025_console_sign_in_codes.js';
import * as m0026 from './migrations/0026_console_sign_in_browser.js';
import * as m0027 from './migrations/0027_cli_logins.js';
import * as m0028 from './migrations/0028_cli_login_approver.js';
import * as m0029 from './migrations/0029_console_credentials.js';
import * as m0030 from './migrations/0030_html_data.js';
import * as m0031 from './migrations/0031_usage_data_meters.js';
import * as m0032 from './migrations/0032_html_data_totals.js';
import * as m0033 from './migrations/0033_account_domains.js';
import * as m0034 from './migrations/0034_domain_renewals.js';
import * as m0035 from './migrations/0035_build_logs_in_store.js';

interface Migration {
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

const migrations: ReadonlyArray<readonly [string, Migration]> = [
  ['0001_accounts', m0001],
  ['0002_events', m0002],
  ['0003_api_tokens', m0003],
  ['0004_webhooks', m0004],
  ['0005_usage', m0005],
  ['0006_deploys', m0006],
  ['0007_app_request_metrics', m0007],
  ['0008_assertion_keys', m0008],
  ['0009_app_auth', m0009],
  ['0010_mail_outbox', m0010],
  ['0011_passkeys', m0011],
  ['0012_token_lineage', m0012],
  ['0013_hostnames', m0013],
  ['0014_usage_once', m0014],
  ['0015_webhook_deliveries', m0015],
  ['0016_usage_open', m0016],
  ['0017_event_retention', m0017],
  ['0018_database_backups', m0018],
  ['0019_builds', m0019],
  ['0020_app_repositories', m0020],
  ['0021_artifact_holds', m0021],
  ['0022_app_domains', m0022],
  ['0023_certificate_orders', m0023],
  ['0024_tls_ticket_keys', m0024],
  ['0025_console_sign_in_codes', m0025],
  ['0026_console_sign_in_browser', m0026],
  ['0027_cli_logins', m0027],
  ['0028_cli_login_approver', m0028],
  ['0029_console_credentials', m0029],
  ['0030_html_data', m0030],
  ['0031_usage_data_meters', m0031],
  ['0032_html_data_totals', m0032],
  ['0033_account_domains', m0033],
  ['0034_domain_renewals', m0034],
  ['0035_build_logs_in_store', m0035],
];

const source: Knex.MigrationSource<readonly [string, Migration]> = {
  getMigrations: async () => [...migrations],
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};

const config = { migrationSource: source, tableName: 'knex_migrations' };

/** Any fixed number: the advisory lock that serialises the making of knex's own tables. */
const bookkeepingLock = 0x5_7c_00_01;

/**
 * knex's tables (what ran, and its lock's single row), made once under an advisory lock. knex makes
 * them itself without one: two API replicas starting together on a new database (a first `helm
 * install`) can both insert the lock's row, and with two rows knex never takes its lock again
 * (every start: "Migration table is already locked"). Extra rows left by that race are removed.
 * The shapes are knex's own (`_createMigrationTable`, `_createMigrationLockTable`).
 */
async function ensureBookkeeping(db: Db): Promise<void> {
  // Made and sound already (every start but the first): no DDL, which a role without CREATE on
  // the schema could not run, and no lock.
  const made = await db.raw<{ rows: Array<{ made: boolean }> }>(
    `select to_regclass('${config.tableName}_lock') is not null and to_regclass('${config.tableName}') is not null as made`,
  );
  if (made.rows[0]?.made && Number((await db(`${config.tableName}_lock`).count({ n: '*' }))[0]?.n) === 1) return;
  await db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [bookkeepingLock]);
    await trx.raw(
      `create table if not exists ${config.tableName} (id serial primary key, name varchar(255), batch integer, migration_time timestamptz)`,
    );
    await trx.raw(`create table if not exists ${config.tableName}_lock (index serial primary key, is_locked integer)`);
    await trx.raw(`delete from ${config.tableName}_lock where index <> (select min(index) from ${config.tableName}_lock)`);
    await trx.raw(`insert into ${config.tableName}_lock (is_locked) select 0 where not exists (select 1 from ${config.tableName}_lock)`);
  });
}

/** Applies every pending migration; returns the names applied. */
export async function migrateLatest(db: Db): Promise<string[]> {
  await ensureBookkeeping(db);
  const [, applied] = (await db.migrate.latest(config)) as [number, string[]];
  return applied;
}

/** Reverts every applied migration; returns the names reverted. */
export async function migrateDownAll(db: Db): Promise<string[]> {
  await ensureBookkeeping(db);
  const [, reverted] = (await db.migrate.rollback(config, true)) as [number, string[]];
  return reverted;
}

export const migrationNames = migrations.map(([name]) => name);
