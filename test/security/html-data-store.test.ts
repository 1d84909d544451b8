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
    assert.equal(await store.remove('app-b', 'notes', { id: a.id }), false);
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
      ...(cur ?? {}),
      title: 'u',
      _author: 'idp:bob',
      _id: 'x',
    }));
    assert.equal(changed?.author, 'idp:ada');
    assert.equal(changed?.id, r.id);
    assert.equal(changed?.fields.title, 'u');
  });
});
