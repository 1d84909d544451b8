import type { Knex } from 'knex';

// Backups of databases (docs/api/data.md#backups): each one a dump in the artifact store, or a
// failure with pg_dump's last words. Kept per database, newest first; a restore names one by id.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('database_backups', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('database').notNullable();
    t.text('status').notNullable();
    t.text('digest');
    t.bigInteger('bytes');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['account_id', 'database', 'created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('database_backups');
}
