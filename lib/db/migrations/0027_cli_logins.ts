import type { Knex } from 'knex';

// `svc login`'s device-code flow (api/cli-login/, docs/cli.md): one row per login a CLI started,
// stored by the SHA-256 of its device code (the CLI alone holds the code), found by the short user
// code a person confirms in the console. A row is pending until the account's owner approves or
// denies it there, and an approved one hands out its token once (state collected); all of it within
// expires_at, ten minutes on. Rows go with an account that approved them, and are swept once expired.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('cli_logins', (t) => {
    t.text('id').primary();
    t.text('user_code').notNullable().unique();
    t.text('name').notNullable();
    t.text('requested_from').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
    t.text('state').notNullable();
    t.timestamp('polled_at', { useTz: true }).nullable();
    t.text('account_id').nullable().references('accounts.id').onDelete('CASCADE');
    t.jsonb('actions').nullable();
    t.integer('token_days').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('cli_logins');
}
