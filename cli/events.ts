// `svc events [--follow] [--kind K,...] [--app APP] [--after ID] [--json]`: the account's event
// log. Following reconnects after a dropped connection with Last-Event-ID, so nothing is missed
// or printed twice; a token revoked meanwhile ends it with the reason. A cursor older than the log's
// retention window is told so (410, or a `gone` event) and the listing goes on from the oldest kept.
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { ApiError, body, createApiClient, type paths } from '../lib/client/index.js';
import { GroupUsageError, parseGroupArgs, printUsage, type ApiTarget, type CommandGroup } from './command.js';

type EventsPage = paths['/events']['get']['responses'][200]['content']['application/json'];
/** An event as the API answers it (GET /events), and as each `data:` of the followed stream carries it. */
type EventRecord = EventsPage['events'][number];

const usage = `usage:
  svc events [--kind K,...] [--app APP] [--after ID] [--json]
                                               the account's events, oldest first (every page)
  svc events --follow [--kind K,...] [--app APP] [--after ID] [--json]
                                               and then each new one as it happens, until ^C; a
                                               dropped connection is made again from the last one
                                               printed, so none is missed or printed twice
  --kind K,...  only these kinds: deploy.live, or a family: deploy.*, token.*
  --app APP     only the events of this app
  --after ID    only those after event ID
  --json        one JSON object per event, as the API sends it
example:
  svc events --follow --kind deploy.* --app shop`;

export interface EventsOptions {
  follow: boolean;
  kinds?: string | undefined;
  app?: string | undefined;
  after?: number | undefined;
  json: boolean;
  out: (line: string) => void;
  /** Where notices go (stderr): a cursor older than what the log keeps. */
  warn?: (line: string) => void;
  /** Waits before a reconnect (tests shorten it). */
  sleep?: (ms: number) => Promise<void>;
}

export function formatEvent(e: EventRecord): string {
  return `${e.id}  ${e.created_at}  ${e.type}  ${e.subject ?? '-'}  ${JSON.stringify(e.data)}`;
}

/** The filters of the query, as given. */
const filters = (o: EventsOptions) => ({ ...(o.kinds ? { kinds: o.kinds } : {}), ...(o.app ? { app: o.app } : {}) });

export async function eventsCommand(t: ApiTarget, o: EventsOptions): Promise<void> {
  const api = createApiClient({ baseUrl: t.apiUrl, token: t.token });
  const print = (e: EventRecord) => o.out(o.json ? JSON.stringify(e) : formatEvent(e));
  let after = o.after ?? 0;
  const relist = (message: string, from: number) => {
    (o.warn ?? ((line: string) => console.error(line)))(`svc: ${message}`);
    after = from;
  };
  if (!o.follow) {
    for (;;) {
      const page: EventsPage = await body(api.GET('/events', { params: { query: { after, limit: 1000, ...filters(o) } } })).catch(
        (err: unknown) => {
          if (!(err instanceof ApiError && err.status === 410)) throw err;
          const from = /after=(\d+)/.exec(err.message)?.[1];
          if (from === undefined) throw err;
          relist(err.message, Number(from));
          return { events: [], next_after: Number(from) };
        },
      );
      page.events.forEach(print);
      if (page.next_after === null) return;
      after = page.next_after;
    }
  }
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let retryMs = 3000;
  for (;;) {
    let ended: string | undefined;
    let gone = false;
    try {
      const { data } = await api.GET('/events', {
        params: { query: { follow: 'true', after, ...filters(o) } },
        headers: { accept: 'text/event-stream', ...(after ? { 'last-event-id': String(after) } : {}) },
        parseAs: 'stream',
      });
      let buf = '';
      const stream = data ? (Readable.fromWeb(data as ReadableStream<Uint8Array>) as AsyncIterable<Buffer>) : [];
      for await (const chunk of stream) {
        buf += chunk.toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame: Record<string, string> = {};
          for (const line of buf.slice(0, i).split('\n')) {
            if (!line || line.startsWith(':')) continue;
            const c = line.indexOf(':');
            frame[line.slice(0, c)] = line.slice(c + 1).trimStart();
          }
          buf = buf.slice(i + 2);
          if (frame.retry) retryMs = Number(frame.retry) || retryMs;
          if (frame.event === 'gone') {
            const g = JSON.parse(frame.data ?? '{}') as { error: string; after: number };
            relist(g.error, g.after);
            gone = true;
          } else if (frame.event === 'error') ended = (JSON.parse(frame.data ?? '{}') as { error?: string }).error ?? 'the stream ended';
          else if (frame.data) {
            const e = JSON.parse(frame.data) as EventRecord;
            if (e.id > after) {
              after = e.id;
              print(e);
            }
          }
        }
      }
    } catch (err) {
      // Refused outright (a bad token, a bad filter): no point retrying.
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) throw err;
    }
    if (ended) throw new Error(`the event stream ended: ${ended}`);
    // Dropped: back after the server's retry, from the last event printed (at once after a relist).
    if (!gone) await sleep(retryMs);
  }
}

export const eventsGroup: CommandGroup = {
  name: 'events',
  synopsis: `  svc events [--follow] [--kind K,...] [--app APP] [--after ID] [--json]
                                              the account's events; --follow streams them and picks up
                                              where it was after a dropped connection`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      follow: { type: 'boolean', short: 'f' },
      kind: { type: 'string' },
      app: { type: 'string' },
      after: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) return printUsage(this, ctx);
    if (positionals.length) throw new GroupUsageError(`svc events takes no arguments (got ${positionals.join(' ')})`, usage);
    const after = values.after === undefined ? undefined : Number(values.after);
    if (after !== undefined && !(Number.isInteger(after) && after >= 0)) throw new GroupUsageError('--after is an event id', usage);
    await eventsCommand(ctx.target(values.token), {
      follow: values.follow === true,
      kinds: values.kind,
      app: values.app,
      after,
      json: values.json === true,
      out: (line) => ctx.out(line),
      warn: (line) => ctx.err(line),
      sleep: (ms) => ctx.sleep(ms),
    });
    return 0;
  },
};
