import type { Knex } from 'knex';

// A machine's run is metered while it runs: its usage row is written when it starts (open), its
// end moved forward on every flush, and closed once when the run ends (api/usage/machine-meter.ts).
// `open` makes the closing happen once however many API replicas see the run end, and tells a
// meter starting after a crash which runs it must still account for.
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.boolean('open').notNullable().defaultTo(false);
  });
  await db.raw('CREATE INDEX usage_records_open ON usage_records (meter) WHERE open');
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropIndex(['meter'], 'usage_records_open');
    t.dropColumn('open');
  });
}
