import type { Knex } from 'knex';

// Who approved a `svc login` (api/cli-login/logins.ts): the console session's token nonce and the
// address it approved from, kept with the login so that the owner's notice mail and an operator can
// tell which session let a terminal in (a stolen console session minting itself a CLI token shows).
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('cli_logins', (t) => {
    t.text('approved_by').nullable();
    t.text('approved_from').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('cli_logins', (t) => {
    t.dropColumn('approved_by');
    t.dropColumn('approved_from');
  });
}
