// `make migrate`: applies pending migrations (or, with `down`, reverts all) to SVC_DATABASE_URL.
import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { connect } from './connection.js';
import { migrateDownAll, migrateLatest } from './migrate.js';

const config = loadConfig();
const log = createLogger('migrate', config.logLevel);
const db = connect(config.databaseUrl, { poolMax: 1, log });
try {
  const direction = process.argv[2] ?? 'up';
  if (direction === 'down') {
    const names = await migrateDownAll(db);
    log.info({ reverted: names }, names.length ? `Reverted ${names.length} migrations` : 'Nothing to revert');
  } else if (direction === 'up') {
    const names = await migrateLatest(db);
    log.info({ applied: names }, names.length ? `Applied ${names.length} migrations` : 'Database is up to date');
  } else {
    throw new Error(`unknown direction ${JSON.stringify(direction)}: use up or down`);
  }
} catch (err) {
  log.error({ err }, 'Migration failed');
  process.exitCode = 1;
} finally {
  await db.destroy();
}
