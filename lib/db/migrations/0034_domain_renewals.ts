import type { Knex } from 'knex';

// Renewing account domains unattended, and what they cost in usage (decision 0035):
//   account_domains  the renewer's schedule of each name: failed attempts in a row and when the next
//                    may be made (back-off), the last failure's reason, and the last notice told of
//                    the expiry (`noticed_expiry`, `noticed_days`), so each is told once per period
//   usage_records    a meter of charges, `domain_registrations`: one row per order bought, its
//                    quantity 1 and its price in `amount_cents` and `currency` (the other meters
//                    leave both null)
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('account_domains', (t) => {
    t.integer('renew_failures').notNullable().defaultTo(0);
    t.timestamp('renew_after', { useTz: true });
    t.text('renew_error');
    t.timestamp('noticed_expiry', { useTz: true });
    t.integer('noticed_days');
  });
  await db.schema.alterTable('usage_records', (t) => {
    t.bigInteger('amount_cents');
    t.text('currency');
  });
  await db.raw('ALTER TABLE usage_records DROP CONSTRAINT usage_records_meter');
  await db.raw(
    "ALTER TABLE usage_records ADD CONSTRAINT usage_records_meter CHECK (meter IN ('machine_seconds', 'build_seconds', 'sandbox_seconds', 'stored_bytes', 'data_requests', 'data_bytes', 'domain_registrations'))",
  );
  await db.raw(
    "ALTER TABLE usage_records ADD CONSTRAINT usage_records_charge CHECK ((meter = 'domain_registrations') = (amount_cents IS NOT NULL AND currency IS NOT NULL))",
  );
}

export async function down(db: Knex): Promise<void> {
  await db('usage_records').where({ meter: 'domain_registrations' }).delete();
  await db.raw('ALTER TABLE usage_records DROP CONSTRAINT usage_records_charge');
  await db.raw('ALTER TABLE usage_records DROP CONSTRAINT usage_records_meter');
  await db.raw(
    "ALTER TABLE usage_records ADD CONSTRAINT usage_records_meter CHECK (meter IN ('machine_seconds', 'build_seconds', 'sandbox_seconds', 'stored_bytes', 'data_requests', 'data_bytes'))",
  );
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('amount_cents');
    t.dropColumn('currency');
  });
  await db.schema.alterTable('account_domains', (t) => {
    t.dropColumn('renew_failures');
    t.dropColumn('renew_after');
    t.dropColumn('renew_error');
    t.dropColumn('noticed_expiry');
    t.dropColumn('noticed_days');
  });
}
