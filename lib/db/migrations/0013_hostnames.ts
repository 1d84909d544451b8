import type { Knex } from 'knex';

// App hostnames (`<name>.<apps domain>`) are global while app names are per account, so the name of
// every App (previews and forks too) is held here by the namespace (account) that made it: nobody
// else can create it, and after the App goes it stays held for its account for a hold period, so a
// deleted app's hostname (bookmarked, linked, trusted by its users) cannot be taken over by another
// account. The primary key makes two accounts racing for one name end with exactly one winner.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('hostnames', (t) => {
    t.text('name').primary();
    t.text('namespace').notNullable();
    t.timestamp('claimed_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    // Null while an App holds the name; when it went, the hold runs from here.
    t.timestamp('released_at', { useTz: true }).nullable();
    t.index(['namespace']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('hostnames');
}
