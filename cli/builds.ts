// `svc builds logs|get|ls|cancel`: a build's log (followed with -f), its record, an app's builds,
// and stopping one (GET /builds/{buildID}/logs, GET /builds/{buildID}, GET /apps/{appID}/builds,
// POST /builds/{buildID}/cancel; docs/api/builds.md). Starting one is `svc build` (cli/build.ts) or
// `svc import` (cli/import.ts), which follow it as followBuild does.
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { body, type ApiClient, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandGroup } from './command.js';
import { table } from './table.js';

/** A build as the API answers it (GET /builds/{buildID}). */
export type BuildBody = paths['/builds/{buildID}']['get']['responses'][200]['content']['application/json'];

const usage = `usage:
  svc builds logs ID [-f]                      a build's log; -f follows it until the build ends
  svc builds get ID [--json]                   a build's record: status, reason, message
  svc builds ls APP [--json]                   the app's builds, newest first
  svc builds cancel ID                         stop a queued or running build
example:
  svc builds ls shop && svc builds logs bld-0123456789abcdef -f`;

/** Writes a log's body to `write` as it comes; a character split between two chunks is written once whole. */
export async function streamText(stream: ReadableStream<Uint8Array> | null | undefined, write: (text: string) => void): Promise<void> {
  const decoder = new StringDecoder('utf8');
  if (stream) for await (const chunk of Readable.fromWeb(stream)) write(decoder.write(chunk as Buffer));
  const rest = decoder.end();
  if (rest) write(rest);
}

/** Streams the build's log to `write` until it ends; answers the build as it ended. */
export async function followBuild(api: ApiClient, id: string, write: (text: string) => void): Promise<BuildBody> {
  const build = { params: { path: { buildID: id } } };
  const { data } = await api.GET('/builds/{buildID}/logs', { params: { ...build.params, query: { follow: 'true' } }, parseAs: 'stream' });
  await streamText(data, write);
  // The log ends with the build; its record may lag the last line by a moment.
  // A succeeded build asked to deploy is deployed a moment after it ends: wait for that too.
  for (let i = 0; i < 40; i++) {
    const b = await body(api.GET('/builds/{buildID}', build));
    const settled =
      !['queued', 'building'].includes(b.status) && !(b.status === 'succeeded' && b.deploy && !b.deploy_id && !b.deploy_error);
    if (settled) return b;
    await new Promise((r) => setTimeout(r, 250));
  }
  return body(api.GET('/builds/{buildID}', build));
}

export const buildsGroup: CommandGroup = {
  name: 'builds',
  synopsis: `  svc builds logs ID [-f] | get ID [--json] | ls APP [--json] | cancel ID
                                              a build's log (followed with -f), record, an app's
                                              builds, or stop one`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, { follow: { type: 'boolean', short: 'f' }, json: { type: 'boolean' } });
    const [command, arg] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const need = (form: string) => {
      if (!arg) throw new GroupUsageError(`svc builds ${form}`, usage);
      return arg;
    };
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'logs': {
        const id = need('logs ID [-f]');
        const query = values.follow ? { follow: 'true' as const } : {};
        const { data } = await api().GET('/builds/{buildID}/logs', { params: { path: { buildID: id }, query }, parseAs: 'stream' });
        await streamText(data, (text) => ctx.write(text));
        return 0;
      }
      case 'get': {
        const b = await body(api().GET('/builds/{buildID}', { params: { path: { buildID: need('get ID') } } }));
        ctx.out(
          values.json
            ? JSON.stringify(b)
            : `${b.id} ${b.app} ${b.status}${b.reason ? ` (${b.reason})` : ''}${b.message ? `: ${b.message}` : ''}`,
        );
        return 0;
      }
      case 'ls': {
        const { builds } = await body(api().GET('/apps/{appID}/builds', { params: { path: { appID: need('ls APP') } } }));
        // --json: the list itself, as it has always been printed.
        if (values.json) ctx.out(JSON.stringify(builds));
        else
          table([
            ['ID', 'STATUS', 'REASON', 'SECONDS', 'CREATED'],
            ...builds.map((b) => [
              b.id,
              b.status,
              b.reason ?? '-',
              b.duration_seconds === null ? '-' : String(b.duration_seconds),
              b.created_at,
            ]),
          ]).forEach((l) => ctx.out(l));
        return 0;
      }
      case 'cancel': {
        const b = await body(api().POST('/builds/{buildID}/cancel', { params: { path: { buildID: need('cancel ID') } } }));
        ctx.out(`${b.id} ${b.status}`);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown builds command: ${command}`, usage);
    }
  },
};
