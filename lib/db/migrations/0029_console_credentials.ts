import type { Knex } from 'knex';

// The console's other ways in for an account owner (docs/decisions/0033-console-sign-in.md):
//   account_passkeys            an owner's passkey for the console: the same columns as app users'
//                               (0011), scope 'console', owner account_id (lib/auth/passkeys.ts).
//   account_passkey_challenges  one ceremony in progress: single use, five minutes.
//   account_identities          the identity-provider subject an account signed in with first: later
//                               sign-ins must be that subject, so an address reassigned at the
//                               provider does not open the account to the mailbox's next holder.
//   console_idp_flows           a sign-in at the identity provider in progress: its state, nonce and
//                               PKCE verifier stay here, bound to the browser that started it by a
//                               cookie's hash (browser_hash), for ten minutes, used once.
// All follow their account: removing one removes its passkeys and identities.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('account_passkeys', (t) => {
    t.text('id').primary();
    t.text('scope').notNullable();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('rp_id').notNullable();
    t.binary('public_key').notNullable();
    t.bigInteger('counter').notNullable().defaultTo(0);
    t.jsonb('transports').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true });
    t.index(['scope', 'account_id']);
  });
  await db.schema.createTable('account_passkey_challenges', (t) => {
    t.text('id').primary();
    t.text('scope').notNullable();
    t.text('account_id').references('accounts.id').onDelete('CASCADE');
    t.text('rp_id').notNullable();
    t.text('challenge').notNullable();
    t.text('purpose').notNullable().checkIn(['register', 'authenticate']);
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });
  await db.schema.createTable('account_identities', (t) => {
    t.text('provider').notNullable();
    t.text('subject').notNullable();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).notNullable();
    t.primary(['provider', 'subject']);
    t.unique(['account_id', 'provider']);
  });
  await db.schema.createTable('console_idp_flows', (t) => {
    t.text('state').primary();
    t.text('browser_hash').notNullable();
    t.jsonb('secrets').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('console_idp_flows');
  await db.schema.dropTableIfExists('account_identities');
  await db.schema.dropTableIfExists('account_passkey_challenges');
  await db.schema.dropTableIfExists('account_passkeys');
}
