import type { Knex } from 'knex';

// Webhook endpoints of an account. The signing secret is kept to sign deliveries and shown to the
// user once, when the endpoint is created.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('webhooks', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.text('secret').notNullable();
    t.jsonb('event_types').notNullable().defaultTo('[]');
    t.text('description').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('disabled_at', { useTz: true }).nullable();
    t.index(['account_id', 'created_at']);
    t.unique(['account_id', 'url']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('webhooks');
}
