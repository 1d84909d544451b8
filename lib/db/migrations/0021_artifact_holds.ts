import type { Knex } from 'knex';

// Which stored artifacts each account holds (issue 30 finding 3): a deploy's upload, a build's
// source and output, a database's backup, each counted once per account in its storage by its bytes.
// A hold is taken, under the account's lock, when the bytes are stored for it; the artifact collector
// (api/storage/collector.ts) releases what no deploy, preview, build or backup of the account needs,
// and deletes an artifact's file once no account holds it. `used_at` is the last time the account
// stored or reused it: a hold younger than the grace period is never released.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('artifact_holds', (t) => {
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('digest').notNullable();
    t.bigInteger('bytes').notNullable();
    t.timestamp('held_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).notNullable();
    t.primary(['account_id', 'digest']);
    t.index(['digest']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('artifact_holds');
}
