import type { Knex } from 'knex';

// Tokens are verified by HMAC against a server key (token_keys), so the database holds no token
// secrets: api_tokens records what the API minted (for listing and for mapping a nonce to its
// account) and token_revocations holds revoked chain links. `seq` lets every API replica pick up
// new revocations by polling for ids above the last one it saw.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('token_keys', (t) => {
    t.text('id').primary();
    t.binary('secret').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.schema.createTable('api_tokens', (t) => {
    t.text('nonce').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('name').nullable();
    t.jsonb('restrictions').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.index(['account_id', 'created_at']);
  });
  await db.schema.createTable('token_revocations', (t) => {
    t.bigIncrements('seq').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('link_id').notNullable();
    t.timestamp('revoked_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.unique(['account_id', 'link_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('token_revocations');
  await db.schema.dropTable('api_tokens');
  await db.schema.dropTable('token_keys');
}
