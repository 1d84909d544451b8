import type { Knex } from 'knex';

// Builds' records (docs/api/builds.md): what each one was asked to build and how it ended, its plan,
// output and log, kept after its Job (and its Build resource) are gone. `deploy_id` is the deploy
// it made (claimed once, by whichever API replica sees it succeed first), or why it could not.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('builds', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('app').notNullable();
    t.jsonb('source').notNullable();
    t.boolean('deploy').notNullable().defaultTo(false);
    t.text('phase').notNullable();
    t.text('reason');
    t.text('message');
    t.jsonb('plan');
    t.text('artifact_digest');
    t.bigInteger('artifact_bytes');
    t.text('image');
    t.text('reused_from');
    t.text('deploy_id');
    t.text('deploy_error');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('started_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.text('log');
    t.boolean('log_truncated').notNullable().defaultTo(false);
    t.index(['account_id', 'app', 'created_at']);
  });
  // A deploy may now come from a build.
  await db.raw('ALTER TABLE deploys DROP CONSTRAINT deploys_origin');
  await db.raw(
    "ALTER TABLE deploys ADD CONSTRAINT deploys_origin CHECK (origin IN ('files', 'tarball', 'image', 'compose', 'rollback', 'fork', 'preview', 'build'))",
  );
}

export async function down(db: Knex): Promise<void> {
  await db.raw('ALTER TABLE deploys DROP CONSTRAINT deploys_origin');
  await db.raw(
    "ALTER TABLE deploys ADD CONSTRAINT deploys_origin CHECK (origin IN ('files', 'tarball', 'image', 'compose', 'rollback', 'fork', 'preview'))",
  );
  await db.schema.dropTable('builds');
}
