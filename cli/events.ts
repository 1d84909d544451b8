// `svc events [--follow] [--kind K,...] [--app APP] [--after ID] [--json]`: the account's event
// log. Following reconnects after a dropped connection with Last-Event-ID, so nothing is missed
// or printed twice; a token revoked meanwhile ends it with the reason. A cursor older than the log's
// retention window is told so (410, or a `gone` event) and the listing goes on from the oldest kept.
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { ApiCallError, callJson, request, type ApiTarget } from './api.js';

interface EventRecord {
  id: number;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

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

function query(o: EventsOptions, extra: Record<string, string>): string {
  const q = new URLSearchParams(extra);
  if (o.kinds) q.set('kinds', o.kinds);
  if (o.app) q.set('app', o.app);
  return q.toString();
}

export async function eventsCommand(t: ApiTarget, o: EventsOptions): Promise<void> {
  const print = (e: EventRecord) => o.out(o.json ? JSON.stringify(e) : formatEvent(e));
  let after = o.after ?? 0;
  const relist = (message: string, from: number) => {
    (o.warn ?? ((line: string) => console.error(line)))(`svc: ${message}`);
    after = from;
  };
  if (!o.follow) {
    for (;;) {
      const page = await callJson<{ events: EventRecord[]; next_after: number | null }>(
        t,
        'GET',
        `/events?${query(o, { after: String(after), limit: '1000' })}`,
      ).catch((err: unknown) => {
        if (!(err instanceof ApiCallError && err.status === 410)) throw err;
        const from = /after=(\d+)/.exec(err.message)?.[1];
        if (from === undefined) throw err;
        relist(err.message, Number(from));
        return { events: [], next_after: Number(from) };
      });
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
      const res = await request(t, 'GET', `/events?${query(o, { follow: 'true', after: String(after) })}`, {
        headers: { accept: 'text/event-stream', ...(after ? { 'last-event-id': String(after) } : {}) },
      });
      let buf = '';
      for await (const chunk of Readable.fromWeb(res.body as ReadableStream) as AsyncIterable<Buffer>) {
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
      if (err instanceof ApiCallError && err.status < 500 && err.status !== 429) throw err;
    }
    if (ended) throw new Error(`the event stream ended: ${ended}`);
    // Dropped: back after the server's retry, from the last event printed (at once after a relist).
    if (!gone) await sleep(retryMs);
  }
}
