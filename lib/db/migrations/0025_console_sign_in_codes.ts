import type { Knex } from 'knex';

// The console's sign-in codes (api/console/codes.ts, docs/decisions/0031-console.md): one row per
// mailed link, stored by the SHA-256 of its code (the code itself is only in the mail), valid until
// expires_at and good for one use (used_at set by the one UPDATE that redeems it). Rows go with their
// account, and are swept once expired.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('console_sign_in_codes', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
    t.timestamp('used_at', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('console_sign_in_codes');
}
