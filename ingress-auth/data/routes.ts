// The generated endpoints of an HTML app's data bindings, on the app's own hostname (decision 0034):
//   GET  /_svc/data/<binding id>          a read: list (?offset=), one (?record=<id> unless named), count
//   POST /_svc/data/<binding id>          a change: create, update, delete, increment, decrement,
//                                         toggle (?record=<id> for a record in a list); JSON or a form
//   GET  /_svc/data/live?b=<id>&b=<id>    live updates of those reads (live.ts)
//   GET  /_svc/data/client.js             the script that fills a page's bindings (client.ts)
// Served here, never by the app's machine: tenant code never holds the platform's database. Each
// request: the binding from the App's compiled allow-list (spec.data; an id not in it is 404), its
// rate, CSRF on changes, the declaring page's admission (the gate, as if the page were asked for),
// the binding's audience, then ownership (access.ts).
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Identity } from '../../lib/auth/identity.js';
import type { CompiledBinding, DataModel } from '../../lib/html-data/compile.js';
import { DataLimitError, type DataStore, type RecordRef, type StoredRecord, type Written } from '../../lib/html-data/store.js';
import { readRecord, RecordInputError, type FieldValue } from '../../lib/html-data/values.js';
import type { App } from '../../lib/resources/index.js';
import { BodyError, readForm, sendJson } from '../auth/respond.js';
import { sameOrigin, type CurrentSession } from '../auth/routes.js';
import { authRequest, type IngressContext } from '../context.js';
import { decisionsFor, gateAll, type Verdict } from '../gate.js';
import { appAtHost } from '../host.js';
import { audienceAdmits, mayChange, type Access } from './access.js';
import type { DataClient } from './client.js';
import type { LiveUpdates } from './live.js';
import type { RateLimiter } from './rate.js';
import type { ReadCache } from './read-cache.js';
import type { DataUsage } from './usage.js';

export interface DataParts {
  store: DataStore;
  live: LiveUpdates;
  /** Reads kept until the app's data changes (read-cache.ts; LiveUpdates invalidates it). */
  cache: ReadCache;
  /** data_requests, data_bytes and data.limit_reached (usage.ts). */
  usage: DataUsage;
  rates: { read: RateLimiter; write: RateLimiter };
  client: DataClient;
}

export const dataPrefix = '/_svc/data/';
const bindingPath = /^\/_svc\/data\/([A-Za-z0-9_-]{16})$/;
const recordId = /^[a-z2-7]{20}$/;
/** A change's body: a record's fields (at most 64 KiB as JSON, lib/html-data/store.ts) as a form or JSON. */
const bodyLimit = 256 * 1024;

/** The App's bindings by id, built once per App object (the informer replaces it on every change). */
const indexed = new WeakMap<DataModel, Map<string, CompiledBinding>>();
export function bindingsOf(app: App): Map<string, CompiledBinding> {
  const data = app.spec.data as DataModel | undefined;
  if (!data) return new Map();
  let out = indexed.get(data);
  if (!out) indexed.set(data, (out = new Map(data.bindings.map((b) => [b.id, b]))));
  return out;
}

/** The path the declaring page is served at (its policy decisions cover every route of the page). */
export const pagePath = (file: string) => `/${file}`;

export class HttpAnswer extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A request's visitor, once the declaring page admitted them: their identity when the page's policy resolves one. */
export type Visitor = { who: Identity | undefined } | 'answered';

/**
 * The declaring page's admission, as if the page itself were asked for by a script (never
 * redirected): 401 with the login URL or 403 answered here. Without sign-in on this ingress, a
 * gated page's bindings fail closed (503).
 */
export async function admitToPage(
  ctx: IngressContext,
  req: IncomingMessage,
  res: ServerResponse,
  app: App,
  file: string,
  requestId: string,
): Promise<Visitor> {
  const path = pagePath(file);
  const decisions = decisionsFor(app, path);
  if (!decisions.length) return { who: undefined };
  if (!ctx.auth) {
    if (decisions.some((d) => d.mode === 'auth'))
      throw new HttpAnswer(503, 'this page requires sign-in, which is not set up on this ingress');
    return { who: undefined };
  }
  const r = authRequest(ctx, req, res, app, requestId);
  const current = await ctx.auth.routes.currentSession(r);
  const verdict = pageVerdict(app, file, current, req.headers);
  switch (verdict.kind) {
    case 'sign-in':
    case 'unauthenticated':
      ctx.auth.routes.challenge(r, false, path);
      return 'answered';
    case 'forbidden':
      ctx.auth.routes.denied(r, current!.session, false, path);
      return 'answered';
  }
  return { who: verdict.identity ? current!.session.identity : undefined };
}

/** The gate's verdict on the declaring page for this visitor, as if a script asked for it (never redirected). */
export function pageVerdict(app: App, file: string, current: CurrentSession | undefined, headers: IncomingHttpHeaders): Verdict {
  const path = pagePath(file);
  return gateAll(decisionsFor(app, path), current, {
    method: 'GET',
    headers,
    url: path,
    namespace: app.metadata.namespace!,
    upgrade: true,
  });
}

/** Answers a refusal of access.ts: 401 as the gate's (with the login URL), or 403. */
function refuse(
  ctx: IngressContext,
  req: IncomingMessage,
  res: ServerResponse,
  app: App,
  file: string,
  access: Access,
  requestId: string,
): void {
  if (access.kind === 'sign-in') {
    if (!ctx.auth) throw new HttpAnswer(401, 'this binding needs a signed-in visitor, and sign-in is not set up on this ingress');
    return ctx.auth.routes.challenge(authRequest(ctx, req, res, app, requestId), false, pagePath(file));
  }
  if (access.kind === 'forbidden') throw new HttpAnswer(403, access.why);
}

/** A record as a binding gives it: the platform's stamps, `_mine` for the visitor's own, then its fields. */
export function present(r: StoredRecord, who: Identity | undefined): Record<string, FieldValue> {
  return {
    _id: r.id,
    _author: r.author,
    _created: r.created.toISOString(),
    _updated: r.updated.toISOString(),
    ...(who !== undefined && r.author !== null && r.author === who.subject ? { _mine: true } : {}),
    ...r.fields,
  };
}

export function dataRoute(ctx: IngressContext, data: DataParts, req: IncomingMessage, res: ServerResponse, requestId: string): void {
  handle(ctx, data, req, res, requestId).catch((err: unknown) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof HttpAnswer) {
      for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
      return sendJson(res, err.status, { error: err.message }, requestId);
    }
    if (err instanceof BodyError) return sendJson(res, err.status, { error: err.message }, requestId);
    if (err instanceof RecordInputError) return sendJson(res, 400, { error: err.message }, requestId);
    if (err instanceof DataLimitError) return sendJson(res, 413, { error: err.message }, requestId);
    ctx.log.error({ err, reqId: requestId }, 'HTML data request failed');
    sendJson(res, 503, { error: 'app data is not available right now; try again shortly' }, requestId);
  });
}

async function handle(ctx: IngressContext, data: DataParts, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
  const app = appAtHost(req.headers.host, ctx.routes, ctx.config);
  if (!app) throw new HttpAnswer(404, `no app is served at ${req.headers.host ?? 'this address'}`);
  const url = new URL(req.url ?? '/', 'http://data.invalid');
  const method = req.method ?? 'GET';
  if (url.pathname === `${dataPrefix}client.js`) {
    if (method !== 'GET' && method !== 'HEAD') throw new HttpAnswer(405, 'GET the client', { allow: 'GET, HEAD' });
    return data.client.send(req, res, requestId);
  }
  const rate = (limiter: RateLimiter, what: string) => {
    const wait = limiter.take(`${app.metadata.uid}|${req.socket.remoteAddress ?? ''}`);
    if (wait)
      throw new HttpAnswer(429, `too many ${what} of this app's data from your address; retry in ${wait} s`, {
        'retry-after': String(wait),
      });
  };
  if (url.pathname === `${dataPrefix}live`) {
    if (method !== 'GET') throw new HttpAnswer(405, 'GET the live updates', { allow: 'GET' });
    rate(data.rates.read, 'reads');
    data.usage.request(app);
    return data.live.open(ctx, app, req, res, url.searchParams.getAll('b'), requestId);
  }
  const id = bindingPath.exec(url.pathname)?.[1];
  const binding = id === undefined ? undefined : bindingsOf(app).get(id);
  if (!binding)
    throw new HttpAnswer(
      404,
      `no data binding ${url.pathname.slice(dataPrefix.length)} on this app (a page older than its last deploy: reload it)`,
    );
  const reads = binding.verb === 'list' || binding.verb === 'one' || binding.verb === 'count';
  if (binding.verb === 'field') throw new HttpAnswer(404, 'a field binding is shown by the read around it: it has no endpoint of its own');
  if (reads ? method !== 'GET' && method !== 'HEAD' : method !== 'POST')
    throw new HttpAnswer(405, `${binding.verb} is ${reads ? 'read with GET' : 'sent with POST'}`, { allow: reads ? 'GET, HEAD' : 'POST' });
  rate(reads ? data.rates.read : data.rates.write, reads ? 'reads' : 'changes');
  data.usage.request(app);
  // A change must come from the app's own pages: browsers say where a request comes from on POST.
  if (!reads && !sameOrigin(authRequest(ctx, req, res, app, requestId)))
    throw new HttpAnswer(403, 'changes to app data from another site are refused');
  const visitor = await admitToPage(ctx, req, res, app, binding.file, requestId);
  if (visitor === 'answered') return;
  const { who } = visitor;
  const ns = app.metadata.namespace!;
  const audience = audienceAdmits(binding, who, ns);
  if (audience.kind !== 'allowed') return refuse(ctx, req, res, app, binding.file, audience, requestId);
  if (reads) {
    const offset = Number(url.searchParams.get('offset') ?? 0);
    if (!Number.isInteger(offset) || offset < 0 || offset > 10_000) throw new HttpAnswer(400, 'offset is a whole number from 0 to 10000');
    const ref = binding.record || url.searchParams.has('record') ? refOf(binding, url) : undefined;
    return sendJson(res, 200, await readBinding(data, app, binding, who, { offset, ref }), requestId);
  }
  try {
    await change(ctx, data, req, res, requestId, app, binding, url, who);
  } catch (err) {
    if (err instanceof DataLimitError) data.usage.limitReached(app, binding.collection!, err.message);
    throw err;
  }
}

/** What a read answers (list, one, count), once the visitor was admitted to it; kept until the app's data changes. */
export interface ReadReply {
  count?: number;
  records?: Array<Record<string, FieldValue>>;
  next_offset?: number;
  record?: Record<string, FieldValue> | null;
}

/**
 * A read binding's answer for this visitor (`who`: the identity its page resolved, undefined for
 * none), through the read cache. The caller has admitted the visitor (page, then audience): `mine`
 * reads need `who`.
 */
export async function readBinding(
  data: Pick<DataParts, 'store' | 'cache'>,
  app: App,
  binding: CompiledBinding,
  who: Identity | undefined,
  at: { offset: number; ref?: RecordRef | undefined },
): Promise<ReadReply> {
  const appUid = app.metadata.uid!;
  const collection = binding.collection!;
  const author = binding.mine ? who!.subject : undefined;
  if (binding.verb === 'count') {
    const n = await data.cache.through(appUid, `${binding.id}|${author ?? ''}`, () => data.store.count(appUid, collection, author));
    return { count: n };
  }
  if (binding.verb === 'list') {
    const limit = binding.limit ?? 50;
    const rows = await data.cache.through(appUid, `${binding.id}|${author ?? ''}|${at.offset}`, () =>
      data.store.list(appUid, collection, {
        ...(author !== undefined ? { author } : {}),
        ...(binding.order ? { order: binding.order } : {}),
        limit: limit + 1,
        offset: at.offset,
      }),
    );
    return {
      records: rows.slice(0, limit).map((r) => present(r, who)),
      ...(rows.length > limit ? { next_offset: at.offset + limit } : {}),
    };
  }
  // one: without a name or an id, the first record it can show (with `mine`, the visitor's own: a profile).
  const { ref } = at;
  const key = `${binding.id}|${author ?? ''}|${ref && 'id' in ref ? ref.id : ''}`;
  // null for none (undefined is the cache's miss).
  const found = await data.cache.through(appUid, key, async () =>
    ref
      ? ((await data.store.find(appUid, collection, ref)) ?? null)
      : ((await data.store.list(appUid, collection, { ...(author !== undefined ? { author } : {}), limit: 1, offset: 0 }))[0] ?? null),
  );
  const visible = found !== null && (!binding.mine || found.author === who!.subject);
  return { record: visible ? present(found, who) : null };
}

/** The changes: create, update, delete and the actions, once the audience admitted the visitor. */
async function change(
  ctx: IngressContext,
  data: DataParts,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  app: App,
  binding: CompiledBinding,
  url: URL,
  who: Identity | undefined,
): Promise<void> {
  const appUid = app.metadata.uid!;
  const collection = binding.collection!;
  const ns = app.metadata.namespace!;
  const fieldsOf = (app.spec.data as DataModel).collections[collection] ?? {};
  const changed = () => {
    data.cache.invalidate(appUid);
    data.usage.wrote(app);
  };
  if (binding.verb === 'create') {
    const body = await readForm(req, bodyLimit);
    const fields = readRecord(fieldsOf, binding.fields ?? [], body, 'create');
    const created = await data.store.create(appUid, collection, who?.subject ?? null, fields);
    changed();
    return sendJson(res, 201, { record: present(created, who) }, requestId);
  }

  const ref = refOf(binding, url);
  const read = binding.within ? bindingsOf(app).get(binding.within) : undefined;
  // Ownership, decided on the record as the store's transaction holds it.
  const check = (current: StoredRecord): Access | undefined => {
    const access = mayChange(binding, read, who, ns, current);
    return access.kind === 'allowed' ? undefined : access;
  };
  let result: Written<Access>;
  if (binding.verb === 'delete') result = await data.store.remove(appUid, collection, ref, check);
  else {
    let next: (current: StoredRecord | undefined) => Record<string, FieldValue>;
    if (binding.verb === 'update') {
      const body = await readForm(req, bodyLimit);
      // A named record not written yet is created whole; otherwise only the fields sent change.
      next = (current) => ({ ...current?.fields, ...readRecord(fieldsOf, binding.fields ?? [], body, current ? 'update' : 'create') });
    } else {
      const field = binding.field!;
      next = (current) => {
        const now = current?.fields[field];
        if (binding.verb === 'toggle') return { ...current?.fields, [field]: now !== true };
        const n = (typeof now === 'number' ? now : 0) + (binding.verb === 'increment' ? 1 : -1);
        if (!Number.isSafeInteger(n)) throw new RecordInputError(`${field} cannot go past ${Number.MAX_SAFE_INTEGER}`);
        return { ...current?.fields, [field]: n };
      };
    }
    result = await data.store.update(appUid, collection, ref, next, check);
  }
  if (result.kind === 'refused') return refuse(ctx, req, res, app, binding.file, result.why, requestId);
  if (result.kind === 'missing') throw new HttpAnswer(404, 'no such record (deleted already?)');
  changed();
  if (binding.verb !== 'delete') return sendJson(res, 200, { record: present(result.record, who) }, requestId);
  res.writeHead(204, { 'cache-control': 'private, no-store', 'x-request-id': requestId });
  res.end();
}

/** The record a binding acts on: its named one, or the one the request names (`?record=<id>`). */
function refOf(binding: CompiledBinding, url: URL): RecordRef {
  if (binding.record) return { name: binding.record };
  const id = url.searchParams.get('record') ?? '';
  if (!recordId.test(id)) throw new HttpAnswer(400, `${binding.verb} acts on one record: send ?record=<its _id>`);
  return { id };
}
