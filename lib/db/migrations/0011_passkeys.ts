import type { Knex } from 'knex';

// Passkeys of app users (WebAuthn), one relying party per app hostname.
//   passkey_credentials  a registered public key. The id is the credential id as the browser sends
//                        it (base64url), so an assertion finds its key in one lookup; rp_id is the
//                        hostname it was registered on (an authenticator signs for exactly that).
//                        counter is the last signature count seen, for clone detection.
//   passkey_challenges   one ceremony in progress: single use (deleted when redeemed), five minutes.
//                        app_user_id is set for registration, where the challenge belongs to the
//                        signed-in user who asked for it; sign-in challenges belong to nobody yet.
// Both follow their app user: removing one removes its passkeys and pending challenges.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('passkey_credentials', (t) => {
    t.text('id').primary();
    t.text('app_uid').notNullable();
    t.text('app_user_id').notNullable().references('app_users.id').onDelete('CASCADE');
    t.text('rp_id').notNullable();
    t.binary('public_key').notNullable();
    t.bigInteger('counter').notNullable().defaultTo(0);
    t.jsonb('transports').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true });
    t.index(['app_uid', 'app_user_id']);
  });
  await db.schema.createTable('passkey_challenges', (t) => {
    t.text('id').primary();
    t.text('app_uid').notNullable();
    t.text('app_user_id').references('app_users.id').onDelete('CASCADE');
    t.text('rp_id').notNullable();
    t.text('challenge').notNullable();
    t.text('purpose').notNullable().checkIn(['register', 'authenticate']);
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('passkey_challenges');
  await db.schema.dropTableIfExists('passkey_credentials');
}
