import type { Knex } from 'knex';

// One append-only event log. Ids are monotonic (bigserial), so they double as SSE event ids and
// as the cursor a follower resumes from.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('events', (t) => {
    t.bigIncrements('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('subject').nullable();
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['account_id', 'id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('events');
}
