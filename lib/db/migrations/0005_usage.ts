import type { Knex } from 'knex';

// Metered usage, one row per measured interval of one subject (a machine, a build, a sandbox) or
// one storage sample. The writers are the components that observe the usage; the API only sums.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('usage_records', (t) => {
    t.bigIncrements('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('meter').notNullable();
    t.text('subject').notNullable();
    t.double('quantity').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('ended_at', { useTz: true }).notNullable();
    t.index(['account_id', 'started_at']);
  });
  await db.raw(
    "ALTER TABLE usage_records ADD CONSTRAINT usage_records_meter CHECK (meter IN ('machine_seconds', 'build_seconds', 'sandbox_seconds', 'stored_bytes'))",
  );
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('usage_records');
}
