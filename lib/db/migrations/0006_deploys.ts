import type { Knex } from 'knex';

// Deploy history. The App custom resource says what should run now; this table remembers every
// deploy, what it ran (the spec fields it set, so a rollback or fork can reapply them exactly),
// who made it and how it ended.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('deploys', (t) => {
    t.text('id').primary();
    // Creation order: IDs are unique, not ordered, and clocks of replicas disagree.
    t.bigIncrements('seq', { primaryKey: false });
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('app_uid').notNullable();
    t.text('app_name').notNullable();
    t.text('status').notNullable();
    t.text('reason');
    t.text('kind').notNullable();
    t.text('digest');
    t.text('image');
    t.text('origin').notNullable();
    t.text('origin_deploy');
    t.jsonb('spec').notNullable();
    t.jsonb('summary').notNullable().defaultTo('{}');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('live_at', { useTz: true });
    t.index(['app_uid', 'seq']);
  });
  await db.raw(
    "ALTER TABLE deploys ADD CONSTRAINT deploys_status CHECK (status IN ('pending', 'building', 'deploying', 'live', 'failed'))",
  );
  await db.raw(
    "ALTER TABLE deploys ADD CONSTRAINT deploys_origin CHECK (origin IN ('files', 'tarball', 'image', 'compose', 'rollback', 'fork', 'preview'))",
  );
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('deploys');
}
