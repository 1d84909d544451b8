// HTML apps' records in the platform's PostgreSQL (migration 0030): the one place they are read and
// written. Callers (ingress-auth/data) have already decided who may do what; this file keeps an
// app's data within its limits, stamps what the platform stamps, and records every change for live
// updates (html_data_changes, announced on `dataChannel` with the App's uid).
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../db/connection.js';
import type { FieldValue } from './values.js';

/** Announced at each change's commit, with the App's uid (ingress-auth's live updates LISTEN). */
export const dataChannel = 'svc_html_data';

/** Per app, documented in docs/api/html-data.md: beyond them a write is refused (413), never trimmed. */
export const storeLimits = {
  /** One record's fields as JSON. */
  recordBytes: 64 * 1024,
  /** Records of one collection. */
  recordsPerCollection: 10_000,
  /** Every record of the app, as JSON. */
  appBytes: 50 * 1024 * 1024,
  /** How far a list pages (offset): past it, order by something else. */
  maxOffset: 10_000,
  /** Changes are kept this long for a stream to resume from. */
  changesKeptMs: 24 * 3600_000,
};

export interface StoredRecord {
  id: string;
  /** A named record's name (`record=main`); null for a list's records. */
  name: string | null;
  /** Who created it (the identity's subject); null for a named record. */
  author: string | null;
  fields: Record<string, FieldValue>;
  created: Date;
  updated: Date;
}

/** A record the caller addresses: by id (a list's), or by name (created at its first write). */
export type RecordRef = { id: string } | { name: string };

export interface Change {
  seq: number;
  collection: string;
  recordId: string;
  /** The record's author (null for a named record): who may hear of its deletion. */
  author: string | null;
  op: 'put' | 'delete';
  /** The record as it is now (put), absent when it was deleted since. */
  record?: StoredRecord;
}

/** What became of an update or a removal: the record as it now is (or was, removed), none, or refused by the caller's check. */
export type Written<R> = { kind: 'done'; record: StoredRecord } | { kind: 'missing' } | { kind: 'refused'; why: R };

/** Why a write was refused by a limit (413). */
export class DataLimitError extends Error {
  override name = 'DataLimitError';
}

interface Row {
  app_uid: string;
  collection: string;
  id: string;
  name: string | null;
  author: string | null;
  fields: Record<string, FieldValue>;
  bytes: number;
  created_at: Date;
  updated_at: Date;
}

const stampColumns: Record<string, string> = { _id: 'id', _author: 'author', _created: 'created_at', _updated: 'updated_at' };

export interface ListQuery {
  /** Only this author's records (`mine`). */
  author?: string;
  order?: { field: string; desc: boolean };
  limit: number;
  offset: number;
}

export class DataStore {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async list(app: string, collection: string, q: ListQuery): Promise<StoredRecord[]> {
    const query = this.db<Row>('html_data_records').where({ app_uid: app, collection });
    if (q.author !== undefined) query.andWhere({ author: q.author });
    const order = q.order ?? { field: '_created', desc: false };
    const dir = order.desc ? 'desc' : 'asc';
    const column = stampColumns[order.field];
    // A declared field's value from the JSON (a value, never an identifier); ties by creation, then id.
    if (column) query.orderBy(column, dir);
    else query.orderByRaw(`fields -> ? ${dir} nulls last`, [order.field]);
    query.orderBy('created_at', dir).orderBy('id', dir);
    const rows = await query.limit(q.limit).offset(Math.min(q.offset, storeLimits.maxOffset));
    return rows.map(toRecord);
  }

  async count(app: string, collection: string, author?: string): Promise<number> {
    const query = this.db('html_data_records').where({ app_uid: app, collection });
    if (author !== undefined) query.andWhere({ author });
    const [row] = await query.count<Array<{ n: string }>>({ n: '*' });
    return Number(row?.n ?? 0);
  }

  async find(app: string, collection: string, ref: RecordRef): Promise<StoredRecord | undefined> {
    const row = await this.db<Row>('html_data_records')
      .where({ app_uid: app, collection, ...('id' in ref ? { id: ref.id } : { name: ref.name }) })
      .first();
    return row && toRecord(row);
  }

  /** A new record stamped with its author (the verified identity) and the time. */
  async create(app: string, collection: string, author: string | null, fields: Record<string, FieldValue>): Promise<StoredRecord> {
    const bytes = sizeOf(fields);
    return this.db.transaction(async (tx) => {
      await this.lockApp(tx, app);
      return this.insert(tx, app, collection, { name: null, author }, fields, bytes);
    });
  }

  /**
   * Changes a record: `change` gets it as it is (undefined for a named record not written yet,
   * which this creates) and returns its new fields; it may throw to refuse what was sent.
   * `check` sees the record first, in the same transaction, and returns why it may not be changed
   * (ownership), if so.
   */
  async update<R>(
    app: string,
    collection: string,
    ref: RecordRef,
    change: (current: StoredRecord | undefined) => Record<string, FieldValue>,
    check: (current: StoredRecord) => R | undefined = () => undefined,
  ): Promise<Written<R>> {
    return this.db.transaction(async (tx) => {
      await this.lockApp(tx, app);
      const found = await tx<Row>('html_data_records')
        .where({ app_uid: app, collection, ...('id' in ref ? { id: ref.id } : { name: ref.name }) })
        .forUpdate()
        .first();
      if (!found && 'id' in ref) return { kind: 'missing' };
      const current = found && toRecord(found);
      const why = current && check(current);
      if (why !== undefined) return { kind: 'refused', why };
      const fields = change(current);
      const bytes = sizeOf(fields);
      // A named record's first write makes it, within the same limits as a create.
      if (!found)
        return {
          kind: 'done',
          record: await this.insert(tx, app, collection, { name: (ref as { name: string }).name, author: null }, fields, bytes),
        };
      await this.assertRoom(tx, app, collection, bytes - found.bytes, false);
      const [row] = await tx<Row>('html_data_records')
        .where({ app_uid: app, collection, id: found.id })
        .update({ fields: JSON.stringify(fields) as unknown as Row['fields'], bytes, updated_at: this.clock() })
        .returning('*');
      await this.changed(tx, app, collection, row!, 'put');
      return { kind: 'done', record: toRecord(row!) };
    });
  }

  /** Removes a record unless `check` gives a reason not to (ownership). */
  async remove<R>(
    app: string,
    collection: string,
    ref: RecordRef,
    check: (current: StoredRecord) => R | undefined = () => undefined,
  ): Promise<Written<R>> {
    return this.db.transaction(async (tx) => {
      const where = { app_uid: app, collection, ...('id' in ref ? { id: ref.id } : { name: ref.name }) };
      const found = await tx<Row>('html_data_records').where(where).forUpdate().first();
      if (!found) return { kind: 'missing' };
      const record = toRecord(found);
      const why = check(record);
      if (why !== undefined) return { kind: 'refused', why };
      await tx('html_data_records').where({ app_uid: app, collection, id: found.id }).delete();
      await this.changed(tx, app, collection, found, 'delete');
      return { kind: 'done', record };
    });
  }

  /** The app's changes after `seq` (oldest first, at most `limit`), each with its record as it is now. */
  async changesAfter(app: string, seq: number, limit = 500): Promise<Change[]> {
    const rows = await this.db('html_data_changes as c')
      .leftJoin('html_data_records as r', function () {
        this.on('r.app_uid', 'c.app_uid').andOn('r.collection', 'c.collection').andOn('r.id', 'c.record_id');
      })
      .where('c.app_uid', app)
      .andWhere('c.seq', '>', seq)
      .orderBy('c.seq')
      .limit(limit)
      .select<
        Array<{ seq: string; c_collection: string; record_id: string; c_author: string | null; op: 'put' | 'delete' } & Partial<Row>>
      >(
        'c.seq',
        'c.collection as c_collection',
        'c.record_id',
        'c.author as c_author',
        'c.op',
        'r.id',
        'r.name',
        'r.author',
        'r.fields',
        'r.created_at',
        'r.updated_at',
      );
    return rows.map((r) => ({
      seq: Number(r.seq),
      collection: r.c_collection,
      recordId: r.record_id,
      author: r.c_author,
      op: r.op,
      ...(r.op === 'put' && r.id ? { record: toRecord(r as Row) } : {}),
    }));
  }

  /** The app's last change's seq (0 when none): where a new stream starts. */
  async lastChange(app: string): Promise<number> {
    const [row] = await this.db('html_data_changes').where({ app_uid: app }).max<Array<{ seq: string | null }>>({ seq: 'seq' });
    return Number(row?.seq ?? 0);
  }

  /** Every record of the app, by collection then creation, a page at a time (the export). */
  async *all(app: string, page = 500): AsyncGenerator<StoredRecord & { collection: string }> {
    let after: { collection: string; created: Date; id: string } | undefined;
    for (;;) {
      const q = this.db<Row>('html_data_records').where({ app_uid: app });
      if (after) {
        const a = after;
        q.andWhereRaw('(collection, created_at, id) > (?, ?, ?)', [a.collection, a.created, a.id]);
      }
      const rows = await q.orderBy(['collection', 'created_at', 'id']).limit(page);
      for (const r of rows) yield { collection: r.collection, ...toRecord(r) };
      if (rows.length < page) return;
      const last = rows[rows.length - 1]!;
      after = { collection: last.collection, created: last.created_at, id: last.id };
    }
  }

  /** The app's records' size and count (usage). */
  async size(app: string): Promise<{ records: number; bytes: number }> {
    const [row] = await this.db('html_data_totals')
      .where({ app_uid: app })
      .select<Array<{ n: string | null; b: string | null }>>(this.db.raw('sum(records) as n'), this.db.raw('sum(bytes) as b'));
    return { records: Number(row?.n ?? 0), bytes: Number(row?.b ?? 0) };
  }

  /**
   * Copies every record of one app into another (a fork asked to take its data): ids, authors and
   * times kept, the change log not (the new app's streams start at its own first change). Returns
   * how many were copied; a record the target has already is left as it is.
   */
  async copyApp(from: string, to: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      await this.lockApp(tx, to);
      const result = await tx.raw<{ rowCount: number }>(
        `insert into html_data_records (app_uid, collection, id, name, author, fields, bytes, created_at, updated_at)
         select ?, collection, id, name, author, fields, bytes, created_at, updated_at from html_data_records where app_uid = ?
         on conflict do nothing`,
        [to, from],
      );
      return result.rowCount;
    });
  }

  /** Deletes everything an app holds (with the app). */
  async removeApp(app: string): Promise<number> {
    await this.db('html_data_changes').where({ app_uid: app }).delete();
    const n = await this.db('html_data_records').where({ app_uid: app }).delete();
    await this.db('html_data_totals').where({ app_uid: app }).delete();
    return n;
  }

  /** Changes older than `storeLimits.changesKeptMs`: a stream older than that starts over. */
  async pruneChanges(): Promise<number> {
    return this.db('html_data_changes')
      .where('at', '<', new Date(this.clock().getTime() - storeLimits.changesKeptMs))
      .delete();
  }

  /** A new record, if the app has room for it, and its change. Under the app's lock. */
  private async insert(
    tx: Knex.Transaction,
    app: string,
    collection: string,
    who: { name: string | null; author: string | null },
    fields: Record<string, FieldValue>,
    bytes: number,
  ): Promise<StoredRecord> {
    await this.assertRoom(tx, app, collection, bytes, true);
    const now = this.clock();
    const [row] = await tx<Row>('html_data_records')
      .insert({
        app_uid: app,
        collection,
        id: newRecordId(),
        ...who,
        fields: JSON.stringify(fields) as unknown as Row['fields'],
        bytes,
        created_at: now,
        updated_at: now,
      })
      .returning('*');
    await this.changed(tx, app, collection, row!, 'put');
    return toRecord(row!);
  }

  /** One writer per app at a time, so the limits count what is there (two creates cannot both take the last room). */
  private async lockApp(tx: Knex.Transaction, app: string): Promise<void> {
    await tx.raw('select pg_advisory_xact_lock(hashtext(?))', [`html-data:${app}`]);
  }

  /** Against the running totals (html_data_totals, kept by a trigger in the same transaction): a row per collection, not every record. */
  private async assertRoom(tx: Knex.Transaction, app: string, collection: string, moreBytes: number, newRecord: boolean): Promise<void> {
    const [row] = await tx('html_data_totals')
      .where({ app_uid: app })
      .select<Array<{ b: string | null; n: string | null }>>(
        tx.raw('sum(bytes) as b'),
        tx.raw('sum(records) filter (where collection = ?) as n', [collection]),
      );
    if (newRecord && Number(row?.n ?? 0) >= storeLimits.recordsPerCollection)
      throw new DataLimitError(`${collection} holds ${storeLimits.recordsPerCollection} records, its most: delete some first`);
    if (Number(row?.b ?? 0) + moreBytes > storeLimits.appBytes)
      throw new DataLimitError(`the app's data would pass ${storeLimits.appBytes / 1024 / 1024} MiB, its most: delete some first`);
  }

  private async changed(tx: Knex.Transaction, app: string, collection: string, row: Row, op: 'put' | 'delete'): Promise<void> {
    await tx('html_data_changes').insert({ app_uid: app, collection, record_id: row.id, author: row.author, op, at: this.clock() });
    await tx.raw('select pg_notify(?, ?)', [dataChannel, app]);
  }
}

/** A record's fields as stored, refused (413) past `storeLimits.recordBytes`. */
function sizeOf(fields: Record<string, FieldValue>): number {
  const bytes = Buffer.byteLength(JSON.stringify(fields));
  if (bytes > storeLimits.recordBytes)
    throw new DataLimitError(`a record is at most ${storeLimits.recordBytes / 1024} KiB; this one is ${bytes} bytes`);
  return bytes;
}

/** 20 random characters of base32 (lowercase): 100 bits, unguessable, no name a binding could write. */
function newRecordId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = '';
  for (const b of randomBytes(20)) out += alphabet[b & 31];
  return out;
}

function toRecord(r: Row): StoredRecord {
  return { id: r.id, name: r.name, author: r.author, fields: r.fields, created: r.created_at, updated: r.updated_at };
}
