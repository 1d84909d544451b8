import type { Knex } from 'knex';

// Custom domains (docs/decisions/0027-app-domains.md). A name is global while accounts are many, so
// each domain an app has is claimed here by its account: the primary key makes two accounts racing
// for one name end with one winner, and another account's claim (pending or verified) is a 409. The
// row also keeps the verifier's schedule: when the name is next checked, and since when it has been
// unverified (a claim nobody verifies for days is dropped, so nobody squats a name they do not own).
// Each account's ownership token (the value of its `_svc-challenge` TXT records) is random, one per
// account, made on first use.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('app_domains', (t) => {
    t.text('name').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('namespace').notNullable();
    t.text('app').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('next_check_at', { useTz: true }).notNullable();
    // The last wait between two checks of a pending name (the back-off grows from it).
    t.integer('backoff_ms').notNullable().defaultTo(0);
    t.timestamp('verified_at', { useTz: true });
    t.index(['account_id', 'app']);
    t.index(['next_check_at']);
  });
  await db.schema.createTable('domain_tokens', (t) => {
    t.text('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.text('token').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('domain_tokens');
  await db.schema.dropTable('app_domains');
}
