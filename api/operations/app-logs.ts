// GET /apps/{appID}/logs: the lines of every machine of an app; with follow=true a stream until the
// client goes away. The reading is in api/logs/machine-logs.ts; docs/api/logs.md describes it.
import { z } from 'zod';
import {
  defaultTail,
  FollowStream,
  formatLine,
  keyOfDate,
  listMachines,
  maxTail,
  recentLines,
  wantsNdjson,
  type LogFormat,
  type Selection,
} from '../logs/machine-logs.js';
import { parseSince } from '../../lib/duration.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { resolveApp, serviceOrInvalid } from '../app-access.js';

/** Whole members: a followed log (api/logs/machine-logs.ts FollowStream) lists machines, reads logs and watches the app. */
type Deps = Pick<ApiDeps, 'apps' | 'machines' | 'log'>;

const logsQuery = z.strictObject({
  tail: z.coerce.number().int().min(0).max(maxTail).default(defaultTail).describe('Lines per machine from before the request.'),
  since: z
    .string()
    .refine(
      (v) => parseSince(v, 0) !== undefined,
      'must be a duration like 90s, 5m, 2h, 1d or 1h30m, or an RFC3339 time like 2026-11-22T04:40:00Z',
    )
    .optional()
    .describe('Leave out older lines: a duration back from now (5m) or an RFC3339 time.'),
  follow: z.enum(['true', 'false']).default('false').describe('true: stream lines as they are written, until the client disconnects.'),
  service: z
    .string()
    .max(30)
    .optional()
    .describe("Only this service's machines (an app deployed from a compose file with several services)."),
});

export function appLogOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/apps/{appID}/logs',
      operationId: 'getAppLogs',
      tag: 'apps',
      summary: 'Get app logs (streamable)',
      action: 'read',
      query: logsQuery,
      handler: async ({ caller, params, query, headers }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const namespace = caller.account.namespace;
        const name = app.name;
        const format: LogFormat = wantsNdjson(headers.accept) ? 'ndjson' : 'text';
        const follow = query.follow === 'true';
        // Log times come from the kubelets' clocks: compare with the real time, not the API clock.
        const now = new Date();
        const since = query.since !== undefined ? parseSince(query.since, now.getTime()) : undefined;
        const from = since ?? (follow && query.tail === 0 ? now : undefined);
        const sel: Selection = { tail: query.tail, ...(from ? { fromKey: keyOfDate(from) } : {}) };
        const responseHeaders = {
          'Content-Type': format === 'ndjson' ? 'application/x-ndjson; charset=utf-8' : 'text/plain; charset=utf-8',
          'Cache-Control': 'no-store',
          'X-Content-Type-Options': 'nosniff',
          // Proxies in front of the API must pass a followed log on as it comes.
          ...(follow ? { 'X-Accel-Buffering': 'no' } : {}),
        };
        const service = query.service !== undefined ? serviceOrInvalid(app, query.service) : undefined;
        const pods = await listMachines(s, namespace, name, service);
        if (!follow) {
          const lines = await recentLines(s.machines, namespace, pods, sel, keyOfDate(now));
          return { body: lines.map((l) => formatLine(l, format)).join(''), headers: responseHeaders };
        }
        const stream = new FollowStream({ s, log: s.machines, namespace, app: name, appUid: app.id, service, sel, format }, pods);
        return { body: stream, headers: responseHeaders };
      },
    }),
  ];
}
