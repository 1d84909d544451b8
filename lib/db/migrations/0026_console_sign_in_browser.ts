import type { Knex } from 'knex';

// A console sign-in code is bound to the browser that asked for it (api/console/codes.ts): the
// SHA-256 of a random value that browser holds in an HttpOnly cookie. Opened there, the link signs
// in at once; opened anywhere else (another device, a mail scanner), it signs in only after the
// person confirms the account it is for, and nothing is spent until then.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('console_sign_in_codes', (t) => {
    t.text('browser_hash').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('console_sign_in_codes', (t) => {
    t.dropColumn('browser_hash');
  });
}
