// `svc api METHOD PATH [--data JSON|@FILE|-]`: any call of the API with the token, for what no
// command covers yet. The body is printed as it comes (a followed stream too); an answer that is
// not a success also says its status and the API's message on stderr, and exits 1. Paths are the
// document's (/apps, /account/usage), so there is no typed client here: PATH is the user's.
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { ReadableStream } from 'node:stream/web';
import { ApiUnreachableError } from '../lib/client/index.js';
import { GroupUsageError, parseGroupArgs, printUsage, readInput, type CommandContext, type CommandGroup } from './command.js';

const usage = `usage:
  svc api METHOD PATH [--data JSON|@FILE|-] [-i]
                                               call the API: PATH as in its document (/apps,
                                               /apps/shop/env), the query in it; the body printed as
                                               it comes; exits 1 when the status is not a success
  --data        a JSON body: inline, @FILE, or - for standard input (sent as application/json)
  -i            print the status line and headers first, on stderr
The API's document: svc api GET /openapi.json
example:
  svc api PATCH /apps/shop/env --data '{"LOG_LEVEL":"debug"}'`;

/** The --data body: inline JSON, @FILE, or - for standard input; refused before any call when it is not JSON. */
async function dataOf(ctx: CommandContext, data: string): Promise<string> {
  const text = data === '-' || data.startsWith('@') ? await readInput(ctx, data === '-' ? '-' : data.slice(1)) : data;
  try {
    JSON.parse(text);
  } catch (err) {
    throw new GroupUsageError(`--data is not JSON: ${err instanceof Error ? err.message : String(err)}`, usage);
  }
  return text;
}

/** The API's `{"error"}` message of a failed call's body, when it is the API's JSON. */
function messageOf(text: string): string | undefined {
  try {
    const v = JSON.parse(text) as { error?: unknown } | null;
    return typeof v?.error === 'string' ? v.error : undefined;
  } catch {
    return undefined;
  }
}

export const rawApiGroup: CommandGroup = {
  name: 'api',
  synopsis: `  svc api METHOD PATH [--data JSON|@FILE|-]   any API call with the token; prints the body, exits 1
                                              on a 4xx or 5xx`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      data: { type: 'string', short: 'd' },
      include: { type: 'boolean', short: 'i' },
    });
    if (values.help) return printUsage(this, ctx);
    const [method, path, extra] = positionals;
    if (!method || !path || extra !== undefined) throw new GroupUsageError('svc api METHOD PATH', usage);
    if (!/^[A-Za-z]+$/.test(method)) throw new GroupUsageError(`not an HTTP method: ${method}`, usage);
    if (!path.startsWith('/')) throw new GroupUsageError('PATH starts with / (as in the document: /apps)', usage);
    const t = ctx.target(values.token);
    const payload = values.data === undefined ? undefined : await dataOf(ctx, values.data);
    let res: Response;
    try {
      res = await fetch(`${t.apiUrl}${path}`, {
        method: method.toUpperCase(),
        headers: { authorization: `Bearer ${t.token}`, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(payload !== undefined ? { body: payload } : {}),
      });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new ApiUnreachableError(t.apiUrl, cause);
    }
    if (values.include) {
      ctx.err(`HTTP ${res.status} ${res.statusText}`);
      res.headers.forEach((value, name) => ctx.err(`${name}: ${value}`));
      ctx.err('');
    }
    if (res.ok) {
      // As it comes: a followed log or event stream is printed line by line.
      // A character split between two chunks is written once whole.
      const text = new StringDecoder('utf8');
      let last = '';
      const write = (s: string) => {
        if (!s) return;
        ctx.write(s);
        last = s;
      };
      if (res.body) for await (const chunk of Readable.fromWeb(res.body as ReadableStream<Uint8Array>)) write(text.write(chunk as Buffer));
      write(text.end());
      // A JSON body has no newline at its end: one, so the shell's prompt is not glued to it.
      if (last && !last.endsWith('\n')) ctx.write('\n');
      return 0;
    }
    const text = await res.text();
    if (text) ctx.write(text.endsWith('\n') ? text : `${text}\n`);
    ctx.err(`svc: ${res.status} ${messageOf(text) ?? res.statusText}`);
    return 1;
  },
};
