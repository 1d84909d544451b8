import type { Knex } from 'knex';

// Running totals of each app's HTML data (decision 0034), so a write checks its limits against a
// row per collection instead of summing every record of the app:
//   html_data_totals  records and bytes per app and collection, kept by a trigger on
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
  await db.raw(`
    create function html_data_totals_follow() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') then
        update html_data_totals set records = records - 1, bytes = bytes - old.bytes
         where app_uid = old.app_uid and collection = old.collection;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into html_data_totals (app_uid, collection, records, bytes) values (new.app_uid, new.collection, 1, new.bytes)
        on conflict (app_uid, collection) do update
          set records = html_data_totals.records + 1, bytes = html_data_totals.bytes + excluded.bytes;
      end if;
      return null;
    end $$`);
  await db.raw(`
    create trigger html_data_totals_follow after insert or update or delete on html_data_records
    for each row execute function html_data_totals_follow()`);
  await db.raw(`
    insert into html_data_totals (app_uid, collection, records, bytes)
    select app_uid, collection, count(*), coalesce(sum(bytes), 0) from html_data_records group by app_uid, collection`);
}

export async function down(db: Knex): Promise<void> {
  await db.raw('drop trigger if exists html_data_totals_follow on html_data_records');
  await db.raw('drop function if exists html_data_totals_follow()');
  await db.schema.dropTableIfExists('html_data_totals');
}
