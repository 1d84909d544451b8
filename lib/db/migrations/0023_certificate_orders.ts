import type { Knex } from 'knex';

// The certificate issuer's orders (docs/decisions/0028-https.md): one row per ACME order of a custom
// domain (and per refusal of the CA), kept so the issuer never exceeds the CA's limits (certificates
// per registered domain per week, failed validations per name per hour, orders per 3 hours) and
// waits out a failure (retry_after) rather than retrying in a loop. A pending row is also the order's
// lease: API replicas never order one name twice at once. No foreign key to accounts: an account
// deleted and made again must not find its budget spent anew.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('certificate_orders', (t) => {
    t.bigIncrements('id').primary();
    t.text('domain').notNullable();
    // The registrable domain (tldts getDomain), which the per-week limit counts by.
    t.text('registered_domain').notNullable();
    t.text('account_id').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('finished_at', { useTz: true });
    t.text('outcome').notNullable().defaultTo('pending');
    // A CamelCase reason (ValidationFailed, RateLimited, ...) and its words.
    t.text('reason');
    t.text('message');
    // Not before this may the name be ordered again.
    t.timestamp('retry_after', { useTz: true });
    t.index(['domain', 'started_at']);
    t.index(['registered_domain', 'started_at']);
    t.index(['started_at']);
  });
  await db.raw(
    "alter table certificate_orders add constraint certificate_orders_outcome check (outcome in ('issued', 'renewed', 'failed', 'refused', 'pending'))",
  );
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('certificate_orders');
}
