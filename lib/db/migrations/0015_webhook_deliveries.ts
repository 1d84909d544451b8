import type { Knex } from 'knex';

// The webhook outbox (lib/webhooks/outbox.ts). A delivery is one event for one endpoint, written in
// the transaction that records the event, with the exact body every attempt sends; a process claims
// due deliveries by a short lease (locked_until) so that one killed mid-attempt loses nothing: the
// lease runs out and another process tries again. Every attempt leaves a row in webhook_attempts.
// Endpoints keep the previous secret during a rotation's overlap, and when they began failing.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('webhook_deliveries', (t) => {
    t.text('id').primary(); // msg_…: the webhook-id header, the same for every attempt
    t.text('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.bigInteger('event_id').notNullable();
    t.text('event_type').notNullable();
    t.text('payload').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable();
    t.timestamp('locked_until', { useTz: true }).nullable();
    t.timestamp('last_attempt_at', { useTz: true }).nullable();
    t.integer('last_status').nullable();
    t.text('last_error').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.unique(['webhook_id', 'event_id']);
    t.index(['webhook_id', 'created_at']);
  });
  await db.raw(
    "ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled'))",
  );
  // The deliverers' query: pending deliveries by due time; finished ones stay out of the index.
  await db.raw("CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'");
  await db.schema.createTable('webhook_attempts', (t) => {
    t.bigIncrements('id').primary();
    t.text('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('attempt').notNullable();
    t.timestamp('attempted_at', { useTz: true }).notNullable();
    t.integer('duration_ms').notNullable();
    t.integer('status').nullable(); // the HTTP status; null when none came (refused, timed out)
    t.text('error').nullable();
    t.text('response_excerpt').nullable();
    t.index(['delivery_id', 'id']);
  });
  await db.schema.alterTable('webhooks', (t) => {
    t.text('previous_secret').nullable();
    t.timestamp('previous_secret_until', { useTz: true }).nullable();
    t.timestamp('failing_since', { useTz: true }).nullable();
    t.text('disabled_reason').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('webhook_attempts');
  await db.schema.dropTable('webhook_deliveries');
  await db.schema.alterTable('webhooks', (t) => {
    t.dropColumns('previous_secret', 'previous_secret_until', 'failing_since', 'disabled_reason');
  });
}
