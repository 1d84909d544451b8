import type { Knex } from 'knex';

// Apps imported from a Git repository (docs/api/imports.md): the repository each one builds from,
// the secret its push webhook is signed with, and the commit last built per branch (what a push or
// a poll compares with). Push deliveries seen, by their id, so a redelivered push builds once.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('app_repositories', (t) => {
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('app').notNullable();
    t.text('url').notNullable();
    t.text('default_branch').notNullable();
    t.text('path');
    t.text('secret_name');
    t.text('hook_id').notNullable().unique();
    t.text('hook_secret').notNullable();
    t.jsonb('heads').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('polled_at', { useTz: true });
    t.primary(['account_id', 'app']);
  });
  await db.schema.createTable('git_deliveries', (t) => {
    t.text('hook_id').notNullable();
    t.text('delivery_id').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable();
    t.primary(['hook_id', 'delivery_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('git_deliveries');
  await db.schema.dropTable('app_repositories');
}
