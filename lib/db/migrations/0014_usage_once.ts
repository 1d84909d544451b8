import type { Knex } from 'knex';

// A usage interval is recorded once however many processes see it end: every API replica follows
// sandboxes ending and inserts the same (account, meter, subject, start) row, and all but the first
// insert do nothing (ON CONFLICT DO NOTHING), which also tells the first one to record the event.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.unique(['account_id', 'meter', 'subject', 'started_at'], { indexName: 'usage_records_once' });
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropUnique(['account_id', 'meter', 'subject', 'started_at'], 'usage_records_once');
  });
}
