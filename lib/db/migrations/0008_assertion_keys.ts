import type { Knex } from 'knex';

// Ed25519 keys that sign the identity assertions ingress-auth hands to apps (X-Svc-Auth-Assertion).
// A key is published (in /_svc/auth/jwks.json) from created_at, signs from active_from, and stops
// signing when a newer key becomes active; it stays published until that moment plus the longest
// assertion lifetime, then it is deleted. The private key never leaves the server side: it is kept
// here as PKCS#8 DER and only its public JWK is ever served.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('assertion_keys', (t) => {
    t.text('kid').primary();
    t.binary('private_pkcs8').notNullable();
    t.jsonb('public_jwk').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('active_from', { useTz: true }).notNullable().unique();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('assertion_keys');
}
