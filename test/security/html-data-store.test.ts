// Attack: what a visitor of an HTML app sends to its data bindings, against the reading of a form's
// values (lib/html-data/values.ts) and the records' store (lib/html-data/store.ts) on a real
// PostgreSQL. A visitor chooses every value and every record id; a tenant chooses names of
// collections and fields. None of it may reach SQL as anything but a value, widen a read past its
// app, claim authorship, or grow an app's data past its limits.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FieldSpec } from '../../lib/html-data/compile.js';
import { DataLimitError, DataStore, storeLimits } from '../../lib/html-data/store.js';
import { readRecord, RecordInputError } from '../../lib/html-data/values.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import { freshDatabase } from '../support/db.js';

const fields: Record<string, FieldSpec> = {
  title: { kind: 'text', required: true, minLength: 0, maxLength: 10_000 },
  n: { kind: 'number', required: false, integer: true },
};

describe('security: html data values and store', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let store: DataStore;
  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
    store = new DataStore(fresh.db);
  });
  after(async () => fresh?.dispose());

  it('a body naming __proto__, constructor or a stamp is refused, never merged', () => {
    for (const body of [
      '{"__proto__": {"admin": true}, "title": "x"}',
      '{"constructor": {"prototype": {}}, "title": "x"}',
      '{"_author": "idp:bob", "title": "x"}',
    ]) {
      const input = JSON.parse(body) as Record<string, unknown>;
      assert.throws(() => readRecord(fields, ['title', 'n'], input, 'create'), RecordInputError, body);
    }
    assert.equal(({} as { admin?: boolean }).admin, undefined, 'no prototype was polluted');
  });

  it('names and values that look like SQL stay values: one app never reads another’s records', async () => {
    const evil = "x') or 1=1; drop table html_data_records; --";
    const a = await store.create('app-a', 'notes', 'idp:ada', { title: evil });
    await store.create('app-b', 'notes', 'idp:bob', { title: 'b only' });
    // An order by a field whose name is SQL (a hand-written App could name one; the CRD refuses it too).
    const listed = await store.list('app-a', 'notes', {
      order: { field: "title' desc; drop table html_data_records; --", desc: true },
      limit: 10,
      offset: 0,
    });
    assert.deepEqual(
      listed.map((r) => r.fields.title),
      [evil],
    );
    assert.equal((await store.list('app-a', evil, { limit: 10, offset: 0 })).length, 0, 'a collection named like SQL is just a name');
    assert.equal(await store.find('app-b', 'notes', { id: a.id }), undefined, 'app-b cannot address app-a’s record by its id');
    assert.deepEqual(await store.remove('app-b', 'notes', { id: a.id }), { kind: 'missing' });
    assert.equal((await store.find('app-a', 'notes', { id: a.id }))?.fields.title, evil, 'still there');
  });

  it('a record past its size, a collection past its count, and concurrent creates at the edge are refused (413), not trimmed', async () => {
    await assert.rejects(store.create('app-c', 'notes', 'idp:ada', { title: 'x'.repeat(storeLimits.recordBytes) }), DataLimitError);
    // The last room in a collection, asked for by many at once: exactly the room is given.
    const limit = storeLimits.recordsPerCollection;
    await fresh.db.raw(
      `insert into html_data_records (app_uid, collection, id, fields, bytes, created_at, updated_at)
       select 'app-c', 'notes', 'r' || g, '{}'::jsonb, 2, now(), now() from generate_series(1, ?) g`,
      [limit - 2],
    );
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => store.create('app-c', 'notes', 'idp:ada', { title: 'race' })));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2, 'two records of room, two creates');
    assert.ok(results.every((r) => r.status === 'fulfilled' || r.reason instanceof DataLimitError));
    assert.equal(await store.count('app-c', 'notes'), limit);
  });

  it('a change keeps the record’s author and id, whatever the new fields say', async () => {
    const r = await store.create('app-d', 'notes', 'idp:ada', { title: 't', n: Number.MAX_SAFE_INTEGER });
    const changed = await store.update('app-d', 'notes', { id: r.id }, (cur) => ({
      ...cur?.fields,
      title: 'u',
      _author: 'idp:bob',
      _id: 'x',
    }));
    assert.equal(changed.kind, 'done');
    const record = changed.kind === 'done' ? changed.record : undefined;
    assert.equal(record?.author, 'idp:ada');
    assert.equal(record?.id, r.id);
    assert.equal(record?.fields.title, 'u');
  });

  it('a refused change or removal writes nothing: the check sees the record inside the transaction', async () => {
    const r = await store.create('app-e', 'notes', 'idp:ada', { title: 'kept' });
    const before = await store.lastChange('app-e');
    const notYours = (cur: { author: string | null }) => (cur.author === 'idp:bob' ? undefined : 'not yours');
    assert.deepEqual(await store.update('app-e', 'notes', { id: r.id }, () => ({ title: 'taken' }), notYours), {
      kind: 'refused',
      why: 'not yours',
    });
    assert.deepEqual(await store.remove('app-e', 'notes', { id: r.id }, notYours), { kind: 'refused', why: 'not yours' });
    assert.equal((await store.find('app-e', 'notes', { id: r.id }))?.fields.title, 'kept');
    assert.equal(await store.lastChange('app-e'), before, 'no change announced');
  });

  it('the limits count from running totals that follow every write, whoever makes it', async () => {
    const a = await store.create('app-f', 'notes', 'idp:ada', { title: 'one' });
    await store.create('app-f', 'tags', 'idp:ada', { title: 'two' });
    // Rows written past the store (a restore, an operator's SQL) are counted too: a trigger keeps the totals.
    await fresh.db.raw(
      `insert into html_data_records (app_uid, collection, id, fields, bytes, created_at, updated_at)
       select 'app-f', 'notes', 'raw' || g, '{}'::jsonb, 1000, now(), now() from generate_series(1, 5) g`,
    );
    await store.update('app-f', 'notes', { id: a.id }, () => ({ title: 'x'.repeat(100) }));
    await store.remove('app-f', 'tags', { name: 'absent' });
    const [row] = await fresh
      .db('html_data_records')
      .where({ app_uid: 'app-f' })
      .select<Array<{ n: number; b: number }>>(fresh.db.raw('count(*)::int as n'), fresh.db.raw('sum(bytes)::int as b'));
    const { n, b } = row!;
    assert.deepEqual(await store.size('app-f'), { records: n, bytes: b });
    assert.equal(n, 7);
    await fresh.db('html_data_records').where({ app_uid: 'app-f', collection: 'tags' }).delete();
    assert.deepEqual(await store.size('app-f'), { records: 6, bytes: b - Buffer.byteLength(JSON.stringify({ title: 'two' })) });
    // An app at its byte limit in the totals is refused its next write.
    await fresh.db('html_data_totals').where({ app_uid: 'app-f', collection: 'notes' }).update({ bytes: storeLimits.appBytes });
    await assert.rejects(store.create('app-f', 'notes', 'idp:ada', { title: 'over' }), DataLimitError);
  });
});
