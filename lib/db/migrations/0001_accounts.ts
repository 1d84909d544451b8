import type { Knex } from 'knex';

// An account is a tenant. Its workloads live in its own Kubernetes namespace, recorded here so the
// API can map a token's account to a namespace without asking the apiserver.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('accounts', (t) => {
    t.text('id').primary();
    t.text('email').notNullable().unique();
    t.text('name').notNullable();
    t.text('namespace').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('accounts');
}
