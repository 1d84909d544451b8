import type { Knex } from 'knex';

// Build logs kept in the artifact store (the object store, decision 0038): an ended build's log is
// an object named by its digest, held by the account like its other artifacts and released when
// the retention says (SVC_ARTIFACT_BUILD_LOG_DAYS). `log` stays for the logs kept before, which are
// read from here as they were.
//   builds.log_digest  the stored log's digest (sha256:...)
//   builds.log_bytes   its size
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('builds', (t) => {
    t.text('log_digest');
    t.bigInteger('log_bytes');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('builds', (t) => {
    t.dropColumn('log_digest');
    t.dropColumn('log_bytes');
  });
}
