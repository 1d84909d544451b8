import type { Knex } from 'knex';

// Request metrics of apps, one row per app and minute, written by the auth proxy's recorder
// (lib/metrics/requests.ts) and summed by GET /apps/{appID}/metrics. Rows are keyed by the App's
// uid, not its name: a deleted app's numbers must not show up for a new app of the same name.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('app_request_metrics', (t) => {
    t.text('app_uid').notNullable();
    t.text('namespace').notNullable();
    t.text('app_name').notNullable();
    t.timestamp('minute', { useTz: true }).notNullable();
    t.bigInteger('requests').notNullable().defaultTo(0);
    t.bigInteger('status_2xx').notNullable().defaultTo(0);
    t.bigInteger('status_3xx').notNullable().defaultTo(0);
    t.bigInteger('status_4xx').notNullable().defaultTo(0);
    t.bigInteger('status_5xx').notNullable().defaultTo(0);
    t.double('duration_ms_sum').notNullable().defaultTo(0);
    // Counts per latency bucket; the bounds are fixed in lib/metrics/requests.ts (latencyBoundsMs).
    t.specificType('latency_buckets', 'bigint[]').notNullable();
    t.primary(['app_uid', 'minute']);
    // Retention deletes by age.
    t.index(['minute']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('app_request_metrics');
}
