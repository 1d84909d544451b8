import type { Knex } from 'knex';

// Running totals of each app's HTML data (decision 0034), so a write checks its limits against a
// row per collection instead of summing every record of the app:
//   html_data_totals  records and bytes per app and collection, kept by statement triggers on
//                     html_data_records in the writing transaction (whatever writes a record, the
//                     totals follow), filled from the records that exist at migration.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('html_data_totals', (t) => {
    t.text('app_uid').notNullable();
    t.text('collection').notNullable();
    t.bigInteger('records').notNullable();
    t.bigInteger('bytes').notNullable();
    t.primary(['app_uid', 'collection']);
  });
  // Once per statement, from its transition tables, grouped per app and collection: a bulk insert
  // or delete (a fork's copy, an app's removal) updates each totals row once, not once per record.
  await db.raw(`
    create function html_data_totals_add() returns trigger language plpgsql as $$
    begin
      insert into html_data_totals (app_uid, collection, records, bytes)
      select app_uid, collection, count(*), coalesce(sum(bytes), 0) from new_rows group by app_uid, collection order by app_uid, collection
      on conflict (app_uid, collection) do update
        set records = html_data_totals.records + excluded.records, bytes = html_data_totals.bytes + excluded.bytes;
      return null;
    end $$`);
  await db.raw(`
    create function html_data_totals_remove() returns trigger language plpgsql as $$
    begin
      update html_data_totals t set records = t.records - d.n, bytes = t.bytes - d.b
      from (select app_uid, collection, count(*) as n, coalesce(sum(bytes), 0) as b from old_rows group by app_uid, collection) d
      where t.app_uid = d.app_uid and t.collection = d.collection;
      return null;
    end $$`);
  await db.raw(`
    create function html_data_totals_move() returns trigger language plpgsql as $$
    begin
      update html_data_totals t set records = t.records - d.n, bytes = t.bytes - d.b
      from (select app_uid, collection, count(*) as n, coalesce(sum(bytes), 0) as b from old_rows group by app_uid, collection) d
      where t.app_uid = d.app_uid and t.collection = d.collection;
      insert into html_data_totals (app_uid, collection, records, bytes)
      select app_uid, collection, count(*), coalesce(sum(bytes), 0) from new_rows group by app_uid, collection order by app_uid, collection
      on conflict (app_uid, collection) do update
        set records = html_data_totals.records + excluded.records, bytes = html_data_totals.bytes + excluded.bytes;
      return null;
    end $$`);
  await db.raw(`create trigger html_data_totals_insert after insert on html_data_records
    referencing new table as new_rows for each statement execute function html_data_totals_add()`);
  await db.raw(`create trigger html_data_totals_delete after delete on html_data_records
    referencing old table as old_rows for each statement execute function html_data_totals_remove()`);
  await db.raw(`create trigger html_data_totals_update after update on html_data_records
    referencing old table as old_rows new table as new_rows for each statement execute function html_data_totals_move()`);
  await db.raw(`
    insert into html_data_totals (app_uid, collection, records, bytes)
    select app_uid, collection, count(*), coalesce(sum(bytes), 0) from html_data_records group by app_uid, collection`);
}

export async function down(db: Knex): Promise<void> {
  for (const t of ['insert', 'delete', 'update']) await db.raw(`drop trigger if exists html_data_totals_${t} on html_data_records`);
  for (const f of ['add', 'remove', 'move']) await db.raw(`drop function if exists html_data_totals_${f}()`);
  await db.schema.dropTableIfExists('html_data_totals');
}
