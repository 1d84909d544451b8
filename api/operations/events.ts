// GET /events: the account's event log, listed (a page after a cursor) or followed (SSE, or NDJSON
// for clients that ask for it) with no server deadline: `id:` is the event id, Last-Event-ID
// resumes after it with no gap and no duplicate, a comment every 15 s keeps proxies from closing
// an idle stream, and a token revoked or expired meanwhile ends it within a second
// (docs/api/events.md).
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import { unknownFiltersMessage } from '../../lib/event-kinds.js';
import { eventJson } from '../../lib/events.js';
import { ApiError, invalid } from '../errors.js';
import { op, type Operation } from '../operation.js';
import { eventSchema } from '../presenters/events.js';
import type { ApiDeps } from '../deps.js';

type Deps = {
  events: Pick<ApiDeps['events'], 'list' | 'horizon'>;
  eventHub: Pick<ApiDeps['eventHub'], 'follow'>;
  /** A follower's token is checked again every second: revoked or expired ends the stream. */
  tokens: Pick<ApiDeps['tokens'], 'authenticate'>;
  /** The retention a 410's message names. */
  config: Pick<ApiDeps['config'], 'eventsRetentionMs'>;
};

const query = z.strictObject({
  after: z.coerce.number().int().min(0).optional().describe("Events after this id (a previous answer's next_after, or the last id seen)"),
  kinds: z.string().max(1000).optional().describe('Comma-separated kinds: exact (deploy.live), prefix.* (deploy.*) or *'),
  app: z.string().max(63).optional().describe('Only events of this app'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  follow: z.enum(['true', 'false']).optional().describe('Stream events as they happen (also with Accept: text/event-stream)'),
});

export const heartbeatMs = 15_000;
/** How often a follower's token is checked again (revocation, expiry). */
export const recheckMs = 1000;

function goneMessage(cursor: number, horizon: number, retentionMs: number): string {
  return `events after ${cursor} are no longer kept (the log keeps ${Math.round(retentionMs / 86_400_000)} days): list again from after=${horizon}, the oldest kept`;
}

export function eventOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/events',
      operationId: 'listEvents',
      tag: 'events',
      summary: 'List or follow events',
      action: 'read',
      accountWide: true,
      query,
      response: z.object({ events: z.array(eventSchema), next_after: z.number().nullable() }),
      handler: async ({ caller, query: q, headers }) => {
        const kinds = q.kinds
          ?.split(',')
          .map((k) => k.trim())
          .filter(Boolean);
        const unknown = kinds && unknownFiltersMessage(kinds);
        if (unknown) throw invalid(unknown);
        const accept = String(headers.accept ?? '');
        const lastEventId = headers['last-event-id'];
        const follow = q.follow === 'true' || accept.includes('text/event-stream') || (q.follow !== 'false' && lastEventId !== undefined);
        const cursor = typeof lastEventId === 'string' && /^\d+$/.test(lastEventId) ? Number(lastEventId) : q.after;
        const horizon = cursor !== undefined ? await s.events.horizon(caller.account.id) : 0;
        const gone = cursor !== undefined && cursor < horizon ? goneMessage(cursor, horizon, s.config.eventsRetentionMs) : undefined;
        if (!follow) {
          if (gone) throw new ApiError('gone', gone);
          const events = await s.events.list(caller.account.id, { after: q.after, limit: q.limit, types: kinds, app: q.app });
          return { body: { events: events.map(eventJson), next_after: events.length === q.limit ? events[events.length - 1]!.id : null } };
        }
        let after = q.after ?? 0;
        if (typeof lastEventId === 'string' && lastEventId !== '') {
          if (!/^\d+$/.test(lastEventId)) throw invalid('Last-Event-ID: must be an event id');
          after = Number(lastEventId);
        }
        const ndjson = accept.includes('application/x-ndjson') && !accept.includes('text/event-stream');
        const out = new PassThrough();
        const streamHeaders: Record<string, string> = {
          'Content-Type': ndjson ? 'application/x-ndjson' : 'text/event-stream',
          'Cache-Control': 'no-store',
          'X-Accel-Buffering': 'no',
        };
        const write = (text: string) => {
          if (!out.destroyed) out.write(text);
        };
        if (!ndjson) write('retry: 3000\n\n');
        if (gone) {
          // Kubernetes answers a watch from a compacted version 410; a stream says it as its one event.
          const json = JSON.stringify({ error: gone, after: horizon });
          out.end(ndjson ? `${JSON.stringify({ error: gone, gone: true, after: horizon })}\n` : `event: gone\ndata: ${json}\n\n`);
          return { body: out, headers: streamHeaders };
        }
        // The token this request was authenticated with, bearer or the console's cookie alike.
        const token = caller.credential;
        const unfollow = await s.eventHub.follow(caller.account.id, {
          after,
          kinds,
          app: q.app,
          deliver: (events) => {
            for (const e of events) {
              const json = JSON.stringify(eventJson(e));
              write(ndjson ? `${json}\n` : `id: ${e.id}\nevent: ${e.type}\ndata: ${json}\n\n`);
            }
          },
        });
        const heartbeat = setInterval(() => write(ndjson ? '\n' : ': keep-alive\n\n'), heartbeatMs);
        const recheck = setInterval(() => {
          s.tokens.authenticate(token).catch((err: unknown) => {
            const reason = err instanceof Error ? err.message : 'token no longer valid';
            write(ndjson ? `${JSON.stringify({ error: reason })}\n` : `event: error\ndata: ${JSON.stringify({ error: reason })}\n\n`);
            out.end();
          });
        }, recheckMs);
        const done = () => {
          clearInterval(heartbeat);
          clearInterval(recheck);
          unfollow();
        };
        out.once('close', done);
        out.once('end', done);
        return { body: out, headers: streamHeaders };
      },
    }),
  ];
}
