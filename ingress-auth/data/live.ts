// Live updates of an HTML app's data reads, as server-sent events (`GET /_svc/data/live?b=<id>...`).
// One PostgreSQL connection per process LISTENs on the data channel (lib/html-data/store.ts
// announces each change's commit with the App's uid); each announcement makes one read of that
// app's changes after the oldest cursor of its streams, sent to each stream by the same rules as
// its reads (access.ts): a record of a `mine` read only to its author, a deletion only to those who
// could read the record (Supabase's rule that a realtime delete carries the key alone). Each event's
// id is the change's seq, so a browser that reconnects sends Last-Event-ID and misses nothing kept
// (a day of changes). A stream ends when its visitor's session is revoked or no longer admitted.
import type { IncomingMessage, ServerResponse } from 'node:http';
import pg from 'pg';
import type { Identity } from '../../lib/auth/identity.js';
import type { CompiledBinding } from '../../lib/html-data/compile.js';
import { dataChannel, type Change, type DataStore } from '../../lib/html-data/store.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { authRequest, type IngressContext } from '../context.js';
import { audienceAdmits } from './access.js';
import type { ReadCache } from './read-cache.js';
import { admitToPage, bindingsOf, HttpAnswer, pageVerdict, present } from './routes.js';
import { appAtHost } from '../host.js';

/** Bindings one stream may follow: the reads of a page. */
const maxBindings = 50;
/** Streams per process; past it a new one is 503 (the browser retries after `retry`). */
const maxStreams = 10_000;
const keepAliveMs = 25_000;
/** How often a stream's visitor is admitted again (a session that expired, a policy that changed). */
const recheckMs = 60_000;

interface Stream {
  appUid: string;
  who: Identity | undefined;
  bindings: CompiledBinding[];
  /** The last change seq this stream was given. */
  after: number;
  res: ServerResponse;
  /** Admits the visitor again; false ends the stream. */
  stillAdmitted: () => Promise<boolean>;
}

export class LiveUpdates {
  private readonly byApp = new Map<string, Set<Stream>>();
  private readonly reading = new Map<string, { again: boolean }>();
  private client: pg.Client | undefined;
  private stopped = false;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly store: DataStore,
    private readonly databaseUrl: string,
    private readonly log: Logger,
    /** Reads kept while this connection hears every change (read-cache.ts). */
    private readonly cache?: ReadCache,
  ) {}

  async start(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, keepAlive: true });
    client.on('notification', (n) => {
      if (!n.payload) return;
      this.cache?.invalidate(n.payload);
      if (this.byApp.has(n.payload)) this.read(n.payload);
    });
    client.on('error', (err) => {
      this.log.warn({ err: err.message }, 'Live data listener failed; reconnecting');
      // Changes may go unheard until it is back: nothing read may be kept meanwhile.
      this.cache?.enable(false);
      client.end().catch(() => undefined);
      if (this.client === client) this.client = undefined;
      if (!this.stopped)
        setTimeout(() => {
          // What changed meanwhile notified nobody: every followed app is read again.
          void this.start().then(
            () => {
              for (const app of this.byApp.keys()) this.read(app);
            },
            () => undefined,
          );
        }, 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${dataChannel}`);
    this.client = client;
    this.cache?.enable(true);
    const keepAlive = setInterval(() => {
      for (const streams of this.byApp.values()) for (const s of streams) s.res.write(': keep-alive\n\n');
    }, keepAliveMs);
    const recheck = setInterval(() => this.recheckAll(''), recheckMs);
    const prune = setInterval(() => void this.store.pruneChanges().catch(() => undefined), 3600_000);
    for (const t of [keepAlive, recheck, prune]) t.unref();
    this.timers.push(keepAlive, recheck, prune);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cache?.enable(false);
    for (const t of this.timers) clearInterval(t);
    for (const streams of this.byApp.values()) for (const s of streams) s.res.end();
    await this.client?.end().catch(() => undefined);
  }

  /** Streams open now (tests, logs). */
  streams(): number {
    let n = 0;
    for (const s of this.byApp.values()) n += s.size;
    return n;
  }

  /** A session of `appUid` ('' for any app) was revoked, or a minute passed: its streams' visitors are admitted again. */
  recheckAll(appUid: string): void {
    for (const [uid, streams] of this.byApp) {
      if (appUid && uid !== appUid) continue;
      for (const s of streams) {
        s.stillAdmitted().then(
          (ok) => {
            if (!ok) s.res.end('event: ended\ndata: {"reason":"no longer admitted: signed out, or the app or its policy changed"}\n\n');
          },
          () => undefined,
        );
      }
    }
  }

  async open(ctx: IngressContext, app: App, req: IncomingMessage, res: ServerResponse, ids: string[], requestId: string): Promise<void> {
    if (ids.length === 0 || ids.length > maxBindings) throw new HttpAnswer(400, `follow 1 to ${maxBindings} reads: ?b=<binding id>&b=...`);
    const known = bindingsOf(app);
    const bindings: CompiledBinding[] = [];
    for (const id of new Set(ids)) {
      const b = known.get(id);
      if (!b) throw new HttpAnswer(404, `no data binding ${id.slice(0, 40)} on this app (a page older than its last deploy: reload it)`);
      if (b.verb !== 'list' && b.verb !== 'one' && b.verb !== 'count')
        throw new HttpAnswer(400, `${b.verb} is not a read: only reads are followed`);
      bindings.push(b);
    }
    if (this.streams() >= maxStreams)
      throw new HttpAnswer(503, 'too many live streams on this ingress; retry shortly', { 'retry-after': '5' });
    // Every page the reads stand on admits the visitor, and every read's audience: refused, never filtered.
    const ns = app.metadata.namespace!;
    // Each read by the identity its own page resolves (a page without a policy resolves none).
    const whoOn = new Map<string, Identity | undefined>();
    for (const file of new Set(bindings.map((b) => b.file))) {
      const visitor = await admitToPage(ctx, req, res, app, file, requestId);
      if (visitor === 'answered') return;
      whoOn.set(file, visitor.who);
    }
    const who = [...whoOn.values()].find((w) => w !== undefined);
    for (const b of bindings) {
      const access = audienceAdmits(b, whoOn.get(b.file), ns);
      if (access.kind === 'sign-in') throw new HttpAnswer(401, `data-svc="${b.source}" needs a signed-in visitor`);
      if (access.kind === 'forbidden') throw new HttpAnswer(403, access.why);
    }
    const appUid = app.metadata.uid!;
    const resume = Number(req.headers['last-event-id'] ?? '');
    const after = Number.isSafeInteger(resume) && resume > 0 ? resume : await this.store.lastChange(appUid);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'private, no-store',
      'x-accel-buffering': 'no',
      'x-request-id': requestId,
    });
    res.write(`retry: 2000\n\n`);
    const stream: Stream = {
      appUid,
      who,
      bindings,
      after,
      res,
      // The App as it is now (a redeploy may have gated a page), the session as it is now, each page's gate again.
      stillAdmitted: async () => {
        const now = appAtHost(req.headers.host, ctx.routes, ctx.config);
        if (!now || now.metadata.uid !== appUid) return false;
        const session = ctx.auth ? await ctx.auth.routes.currentSession(authRequest(ctx, req, res, now, requestId)) : undefined;
        if (who && session?.session.identity.subject !== who.subject) return false;
        for (const file of whoOn.keys()) if (pageVerdict(now, file, session, req.headers).kind !== 'forward') return false;
        return true;
      },
    };
    let streams = this.byApp.get(appUid);
    if (!streams) this.byApp.set(appUid, (streams = new Set()));
    streams.add(stream);
    res.on('close', () => {
      const set = this.byApp.get(appUid);
      set?.delete(stream);
      if (set?.size === 0) this.byApp.delete(appUid);
    });
    // A resume sends what it missed at once.
    if (resume > 0) this.read(appUid);
  }

  /** Reads the app's new changes for its streams; one read at a time per app, one more if asked meanwhile. */
  private read(appUid: string): void {
    const busy = this.reading.get(appUid);
    if (busy) {
      busy.again = true;
      return;
    }
    const state = { again: false };
    this.reading.set(appUid, state);
    this.readOnce(appUid)
      .catch((err: unknown) => this.log.warn({ err, app: appUid }, 'Reading data changes for live streams failed'))
      .finally(() => {
        this.reading.delete(appUid);
        if (state.again) this.read(appUid);
      });
  }

  private async readOnce(appUid: string): Promise<void> {
    for (;;) {
      const streams = this.byApp.get(appUid);
      if (!streams?.size) return;
      const from = Math.min(...[...streams].map((s) => s.after));
      const changes = await this.store.changesAfter(appUid, from);
      if (!changes.length) return;
      for (const s of streams) {
        let out = '';
        for (const c of changes) if (c.seq > s.after) out += eventsFor(s, c);
        s.after = Math.max(s.after, changes[changes.length - 1]!.seq);
        if (out) s.res.write(out);
      }
      if (changes.length < 500) return;
    }
  }
}

/** The events one change makes for one stream: one per read of its collection the stream follows and may see it through. */
export function eventsFor(s: Pick<Stream, 'who' | 'bindings'>, c: Change): string {
  let out = '';
  const own = s.who !== undefined && c.author !== null && c.author === s.who.subject;
  for (const b of s.bindings) {
    if (b.collection !== c.collection) continue;
    if (b.mine && !own) continue;
    if (b.verb === 'one' && b.record && c.record?.name !== b.record && c.op === 'put') continue;
    const data =
      b.verb === 'count'
        ? { b: b.id, op: c.op }
        : c.op === 'delete' || !c.record
          ? { b: b.id, op: 'delete', id: c.recordId }
          : { b: b.id, op: 'put', record: present(c.record, s.who) };
    out += `id: ${c.seq}\nevent: change\ndata: ${JSON.stringify(data)}\n\n`;
  }
  return out;
}
