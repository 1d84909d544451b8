import type { Knex } from 'knex';

// Two meters of HTML apps' data bindings (docs/api/usage.md, decision 0034), recorded by ingress-auth:
//   data_requests  requests to an app's bindings, a row per app and minute (each ingress process adds
//                  its count to the minute's row)
//   data_bytes     the size of an app's records, sampled like stored_bytes (the latest per app counts)
export async function up(db: Knex): Promise<void> {
  await db.raw('ALTER TABLE usage_records DROP CONSTRAINT usage_records_meter');
  await db.raw(
    "ALTER TABLE usage_records ADD CONSTRAINT usage_records_meter CHECK (meter IN ('machine_seconds', 'build_seconds', 'sandbox_seconds', 'stored_bytes', 'data_requests', 'data_bytes'))",
  );
}

export async function down(db: Knex): Promise<void> {
  await db('usage_records').whereIn('meter', ['data_requests', 'data_bytes']).delete();
  await db.raw('ALTER TABLE usage_records DROP CONSTRAINT usage_records_meter');
  await db.raw(
    "ALTER TABLE usage_records ADD CONSTRAINT usage_records_meter CHECK (meter IN ('machine_seconds', 'build_seconds', 'sandbox_seconds', 'stored_bytes'))",
  );
}
