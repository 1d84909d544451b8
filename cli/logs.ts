// `svc logs APP [-f] [--service S] [--since T] [--tail N] [--json]`: what the app's machines write
// (GET /apps/{appID}/logs, docs/api/logs.md). Lines are read as NDJSON, so each has its time and
// machine; --json prints them as they came, otherwise as the API's text form. Following survives a
// dropped connection: it reconnects with since=<the time it had reached> and tail=0, and skips the
// lines it had already printed that come again, so nothing is missed and nothing is printed twice.
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { ReadableStream } from 'node:stream/web';
import { ApiError } from '../lib/client/index.js';
import { LogCursor } from '../lib/logs/resume.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandContext, type CommandGroup } from './command.js';

/**
 * One NDJSON line of GET /apps/{appID}/logs. The OpenAPI document gives the logs' 200 no schema (the
 * body is text or NDJSON, not JSON), so this is docs/api/logs.md's shape, read defensively.
 */
export interface LogLineBody {
  time: string;
  machine: number | null;
  service?: string;
  pod: string;
  line: string;
}

const usage = `usage:
  svc logs APP [-f] [--service S] [--since T] [--tail N] [--json]
                                               the recent lines of every machine of the app, by time;
                                               -f keeps following (and reconnects by itself after a
                                               dropped connection, without a gap or a repeat)
  --since T     leave out older lines: 90s, 5m, 2h, 1d, 1h30m, or an RFC3339 time
  --tail N      lines per machine from before now (default 100; with -f, 0 for only new lines)
  --service S   only this service's machines (an app of several compose services)
  --json        one JSON object per line as the API sends it: time, machine, service, pod, line
example:
  svc logs shop -f --since 10m`;

/** A line as the API's text form has it: `<time> m<ordinal> <line>` (`<service>/m<ordinal>` in an app of several). */
export function formatLogLine(l: LogLineBody): string {
  const who = l.machine === null ? l.pod : `${l.service ? `${l.service}/` : ''}m${l.machine}`;
  return `${l.time} ${who} ${l.line}`;
}

function parseLogLine(text: string): LogLineBody | undefined {
  try {
    const v = JSON.parse(text) as Partial<LogLineBody> | null;
    if (v && typeof v.time === 'string' && typeof v.pod === 'string' && typeof v.line === 'string') return v as LogLineBody;
  } catch {
    // Not a log line: a proxy's page in a 200; left out.
  }
  return undefined;
}

export interface LogsOptions {
  app: string;
  follow: boolean;
  service?: string | undefined;
  since?: string | undefined;
  tail?: number | undefined;
  json: boolean;
  token?: string | undefined;
  /** No byte for this long on a followed log: the connection is taken as dead and made again. */
  idleMs?: number;
}

/** Why a follow must stop instead of reconnecting: the API refused (a bad token, no such app). */
const final = (err: unknown) => err instanceof ApiError && err.status < 500 && err.status !== 429;

export async function followLogs(ctx: CommandContext, o: LogsOptions): Promise<void> {
  const api = connect(ctx, o.token);
  const cursor = new LogCursor();
  const idleMs = o.idleMs ?? 60_000;
  let retryMs = 500;
  for (let first = true; ; first = false) {
    // Resuming: every line from the point reached (tail=0 with since); before any line, the first request again.
    const reached = first ? undefined : cursor.resume();
    const resuming = reached !== undefined;
    const since = reached ?? o.since;
    const query = {
      ...(resuming ? { tail: 0 } : o.tail !== undefined ? { tail: o.tail } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(o.follow ? { follow: 'true' as const } : {}),
      ...(o.service !== undefined ? { service: o.service } : {}),
    };
    const abort = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    const awake = () => {
      clearTimeout(idle);
      if (o.follow) idle = setTimeout(() => abort.abort(new Error(`no line for ${idleMs / 1000} s`)), idleMs);
    };
    try {
      awake();
      const { data } = await api.GET('/apps/{appID}/logs', {
        params: { path: { appID: o.app }, query },
        headers: { accept: 'application/x-ndjson' },
        parseAs: 'stream',
        signal: abort.signal,
      });
      retryMs = 500;
      let rest = '';
      // A character split between two chunks is decoded once whole.
      const decoder = new StringDecoder('utf8');
      const take = (text: string) => {
        const l = text.trim() ? parseLogLine(text) : undefined;
        if (l && cursor.accept(text, l)) ctx.out(o.json ? text : formatLogLine(l));
      };
      if (data) {
        for await (const chunk of Readable.fromWeb(data as ReadableStream<Uint8Array>) as AsyncIterable<Buffer>) {
          awake();
          rest += decoder.write(chunk);
          const lines = rest.split('\n');
          rest = lines.pop()!;
          lines.forEach(take);
        }
      }
      // A line cut by the end of the body is only whole when the body ended cleanly.
      rest += decoder.end();
      if (rest) take(rest);
      if (!o.follow) return;
      // The API ended a followed log (the app was deleted, or a proxy's deadline): go on if it can.
    } catch (err) {
      if (!o.follow || final(err)) throw err;
      if (!abort.signal.aborted)
        ctx.err(`svc: the log connection broke (${err instanceof Error ? err.message : String(err)}); reconnecting`);
    } finally {
      clearTimeout(idle);
    }
    await ctx.sleep(retryMs);
    retryMs = Math.min(retryMs * 2, 10_000);
  }
}

export const logsGroup: CommandGroup = {
  name: 'logs',
  synopsis: `  svc logs APP [-f] [--service S] [--since T] [--tail N] [--json]
                                              what the app's machines write; -f follows, picking up
                                              where it was after a dropped connection`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      follow: { type: 'boolean', short: 'f' },
      service: { type: 'string' },
      since: { type: 'string' },
      tail: { type: 'string' },
      json: { type: 'boolean' },
    });
    const [app, extra] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!app) throw new GroupUsageError('name the app: svc logs APP', usage);
    if (extra !== undefined) throw new GroupUsageError(`one app at a time (got ${app} and ${extra})`, usage);
    const tail = values.tail === undefined ? undefined : Number(values.tail);
    if (tail !== undefined && !(Number.isInteger(tail) && tail >= 0)) throw new GroupUsageError('--tail is a number of lines', usage);
    await followLogs(ctx, {
      app,
      follow: values.follow === true,
      service: values.service,
      since: values.since,
      tail,
      json: values.json === true,
      token: values.token,
    });
    return 0;
  },
};
