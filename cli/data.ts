// `svc data export APP`: every record an HTML app's data bindings stored, as NDJSON on stdout, one
// record a line (GET /apps/{appID}/data, an extension; docs/api/html-data.md#export). Streamed as it
// comes: an app's data is never held whole, here or in the API.
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandGroup } from './command.js';

const usage = `usage:
  svc data export APP                          every record of an HTML app's data bindings, one JSON
                                               object a line (collection, _id, _author, _created,
                                               _updated and its fields)
example:
  svc data export guestbook > guestbook.ndjson && wc -l guestbook.ndjson`;

export const dataGroup: CommandGroup = {
  name: 'data',
  synopsis: `  svc data export APP                         an HTML app's records (data-svc bindings) as NDJSON`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {});
    const [command, app] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (command !== 'export') throw new GroupUsageError(command ? `unknown data command: ${command}` : '', usage);
    if (!app) throw new GroupUsageError('svc data export APP', usage);
    const api = connect(ctx, values.token);
    const { data } = await api.GET('/apps/{appID}/data', { params: { path: { appID: app } }, parseAs: 'stream' });
    if (data)
      for await (const chunk of Readable.fromWeb(data as ReadableStream<Uint8Array>) as AsyncIterable<Buffer>)
        ctx.write(chunk.toString('utf8'));
    return 0;
  },
};
