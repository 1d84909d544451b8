import type { Knex } from 'knex';

// The event log keeps a window (SVC_EVENTS_RETENTION_DAYS). What the purge deleted of an account is
// remembered as the highest id it deleted: a cursor before it would skip events silently, so it
// is answered 410 ("gone, relist"), as Kubernetes answers a watch from a compacted resourceVersion.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('event_horizons', (t) => {
    t.text('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.bigInteger('purged_through').notNullable();
    t.timestamp('purged_at', { useTz: true }).notNullable();
  });
  await db.schema.alterTable('events', (t) => {
    t.index(['created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('events', (t) => {
    t.dropIndex(['created_at']);
  });
  await db.schema.dropTable('event_horizons');
}
