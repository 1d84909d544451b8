import type { Knex } from 'knex';

// A token minted through POST /account/tokens by another token records that token's chain: its root
// nonce, its links and its own ancestors. Revoking any of them revokes the minted token too (and
// whatever it minted in turn), checked at every authentication, so no race leaves a child alive.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('api_tokens', (t) => {
    t.jsonb('ancestors').notNullable().defaultTo('[]');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('api_tokens', (t) => {
    t.dropColumn('ancestors');
  });
}
