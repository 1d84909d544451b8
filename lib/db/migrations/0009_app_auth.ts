import type { Knex } from 'knex';

// Sign-in on app hostnames (ingress-auth). Every secret (session cookie, sign-in link, handoff) is
// stored only as the SHA-256 of its value, so a database dump signs nobody in.
//   app_users       app-scoped people (policies `required` / `emails`), one per app and address
//   app_sessions    one signed-in browser on one app hostname; limits per kind (app or workforce)
//   auth_links      email sign-in links (reusable while the address stays in the policy) and
//                   one-time handoffs (owner links minted by the API, provider callbacks)
//   auth_flows      an identity-provider sign-in in progress (state, nonce, PKCE verifier)
//   auth_recipients addresses of an app's `emails` policy already sent an invitation
//   auth_rate       fixed-window counters of sign-in link requests
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('app_users', (t) => {
    t.text('id').primary();
    t.text('app_uid').notNullable();
    t.text('app_namespace').notNullable();
    t.text('app_name').notNullable();
    t.text('email').notNullable();
    t.text('name');
    t.text('last_provider');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_sign_in_at', { useTz: true });
    t.timestamp('disabled_at', { useTz: true });
    t.unique(['app_uid', 'email']);
    t.index(['app_namespace', 'app_name']);
  });
  await db.schema.createTable('app_sessions', (t) => {
    t.text('id').primary();
    t.text('app_uid').notNullable();
    t.text('host').notNullable();
    t.text('kind').notNullable();
    t.text('provider').notNullable();
    t.text('subject').notNullable();
    t.text('email').notNullable();
    t.text('name');
    t.jsonb('facts').notNullable().defaultTo('{}');
    t.text('app_user_id').references('app_users.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_seen_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.index(['app_uid']);
    t.index(['app_user_id']);
  });
  await db.schema.createTable('auth_links', (t) => {
    t.text('id').primary();
    t.text('app_uid').notNullable();
    t.text('kind').notNullable();
    t.text('email');
    t.jsonb('identity');
    t.text('binding');
    t.text('next');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.index(['app_uid', 'email']);
  });
  await db.schema.createTable('auth_flows', (t) => {
    t.text('id').primary();
    t.text('app_uid').notNullable();
    t.text('host').notNullable();
    t.text('provider').notNullable();
    t.jsonb('secrets').notNullable();
    t.text('binding').notNullable();
    t.text('next').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await db.schema.createTable('auth_recipients', (t) => {
    t.text('app_uid').notNullable();
    t.text('email').notNullable();
    t.timestamp('invited_at', { useTz: true }).notNullable();
    t.primary(['app_uid', 'email']);
  });
  await db.schema.createTable('auth_rate', (t) => {
    t.text('key').notNullable();
    t.timestamp('window_start', { useTz: true }).notNullable();
    t.integer('count').notNullable();
    t.primary(['key', 'window_start']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['auth_rate', 'auth_recipients', 'auth_flows', 'auth_links', 'app_sessions', 'app_users'])
    await db.schema.dropTableIfExists(table);
}
