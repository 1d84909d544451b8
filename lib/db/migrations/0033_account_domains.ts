import type { Knex } from 'knex';

// Account domains bought through the registrar (docs/decisions/0035-registrar.md):
//   domain_orders    every purchase (a registration or a renewal), written `pending` before the
//                    registrar is called and settled `succeeded` or `failed` (with the reason) after:
//                    a retried request finds its order by (account, idempotency key) and never buys
//                    twice; a renewal names the expiry it extends (`from_expiry`), one live order per
//                    domain and expiry, so a period is never renewed twice. Amounts in cents.
//   account_domains  the names an account holds: expiry, auto-renew (the platform's, not the
//                    registrar's), lock and the registry's statuses, the renewal price last quoted.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('domain_orders', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('domain').notNullable();
    t.text('kind').notNullable().checkIn(['register', 'renew']);
    t.text('idempotency_key').notNullable();
    t.text('state').notNullable().checkIn(['pending', 'succeeded', 'failed']);
    t.text('reason');
    t.text('message');
    t.integer('years').notNullable();
    t.bigInteger('amount_cents').notNullable();
    t.text('currency').notNullable();
    t.timestamp('from_expiry', { useTz: true });
    t.text('registrar_order');
    t.jsonb('contact');
    t.boolean('auto_renew');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('finished_at', { useTz: true });
    t.unique(['account_id', 'idempotency_key']);
    t.index(['account_id', 'created_at']);
  });
  await db.raw(
    `create unique index domain_orders_one_renewal on domain_orders (domain, from_expiry) where kind = 'renew' and state <> 'failed'`,
  );
  await db.raw(
    `create unique index domain_orders_one_registration on domain_orders (domain) where kind = 'register' and state = 'pending'`,
  );
  await db.schema.createTable('account_domains', (t) => {
    t.text('name').primary();
    t.text('account_id').notNullable();
    t.timestamp('registered_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.boolean('auto_renew').notNullable();
    t.boolean('locked').notNullable();
    t.jsonb('statuses').notNullable();
    t.bigInteger('renewal_cents');
    t.text('currency').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['account_id', 'name']);
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('account_domains');
  await db.schema.dropTableIfExists('domain_orders');
}
