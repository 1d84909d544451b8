import type { Knex } from 'knex';

// HTML apps' records (docs/api/html-data.md, decision 0034), written only through the bindings
// ingress-auth serves:
//   html_data_records  one record of an app's collection, keyed by the App's uid (never its name: a
//                      new App of a deleted one's name starts empty), the collection and a random id;
//                      a named record (`record=main`) has its name, unique in its collection, and no
//                      author. `fields` holds the declared fields only (lib/html-data/values.ts);
//                      `bytes` their JSON size, summed for the app's limit and its usage.
//   html_data_changes  what changed, in order, for live updates: a stream resumes after the last
//                      seq it was sent (Last-Event-ID). Keys and the author only (a delete is sent
//                      to those who could read the record), never contents; pruned after a day.
// A collection's name is a value in a column, never an identifier in SQL.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('html_data_records', (t) => {
    t.text('app_uid').notNullable();
    t.text('collection').notNullable();
    t.text('id').notNullable();
    t.text('name');
    t.text('author');
    t.jsonb('fields').notNullable();
    t.integer('bytes').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.primary(['app_uid', 'collection', 'id']);
    t.unique(['app_uid', 'collection', 'name']);
    t.index(['app_uid', 'collection', 'created_at']);
    t.index(['app_uid', 'collection', 'author']);
  });
  await db.schema.createTable('html_data_changes', (t) => {
    t.bigIncrements('seq').primary();
    t.text('app_uid').notNullable();
    t.text('collection').notNullable();
    t.text('record_id').notNullable();
    t.text('author');
    t.text('op').notNullable().checkIn(['put', 'delete']);
    t.timestamp('at', { useTz: true }).notNullable();
    t.index(['app_uid', 'seq']);
    t.index(['at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('html_data_changes');
  await db.schema.dropTableIfExists('html_data_records');
}
