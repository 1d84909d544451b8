// `svc build`: builds a directory (packed as .tar.gz, without dependency and VCS directories) or a
// Git repository for an app (POST /builds), streaming the build's log as it runs and exiting with
// its result (docs/api/builds.md). Reading, listing and canceling builds is `svc builds`.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { create as tarCreate } from 'tar';
import { body, sendBytes, type ApiClient } from '../lib/client/index.js';
import { followBuild, type BuildBody } from './builds.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandContext, type CommandGroup } from './command.js';
import { formatBytes } from './table.js';

const usage = `usage:
  svc build [DIR] --app APP [--deploy] [--no-follow] [--json]
  svc build --git URL [--ref REF] [--path DIR] --app APP [--deploy] [--no-follow] [--json]
                                               build a directory (default .; node_modules, .git and
                                               the like left out) or a Git repository for APP,
                                               streaming its log; exits 0 when it succeeded
  --deploy      deploy the output to the app when the build succeeds
  --no-follow   print the build's id once it is queued, and do not stream its log
  --json        print only the build's record as it ended (or as it was queued, with --no-follow)
example:
  svc build ./site --app shop --deploy`;

/** Directories a source upload leaves out: what the build makes again, and the VCS. */
const leftOut = new Set(['node_modules', '.git', '.python', '__pycache__', '.venv']);

export interface BuildOptions {
  dir?: string;
  app: string;
  deploy: boolean;
  git?: { url: string; ref?: string; path?: string };
  follow: boolean;
  json: boolean;
}

async function create(api: ApiClient, o: BuildOptions): Promise<BuildBody> {
  if (o.git) return body(api.POST('/builds', { body: { app: o.app, deploy: o.deploy, git: o.git } }));
  const dir = path.resolve(o.dir ?? '.');
  if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new GroupUsageError(`${dir} is not a directory`, usage);
  const archive = tarCreate(
    { gzip: true, cwd: dir, portable: true, follow: false, filter: (p) => !p.split('/').some((part) => leftOut.has(part)) },
    ['.'],
  ) as unknown as AsyncIterable<Buffer>;
  const stream = Readable.toWeb(Readable.from(archive)) as ReadableStream<Uint8Array>;
  const query = { app: o.app, ...(o.deploy ? { deploy: 'true' as const } : {}) };
  // body: '' stands for the archive, which sendBytes sends (the document types a .tar.gz as a string).
  return body(api.POST('/builds', { params: { query }, body: '', ...sendBytes(stream, 'application/gzip') }));
}

/** Runs a build as `svc build` does: svc's exit code, 0 when it succeeded. */
export async function buildCommand(api: ApiClient, ctx: Pick<CommandContext, 'write'>, o: BuildOptions): Promise<number> {
  const created = await create(api, o);
  const out = (line: string) => ctx.write(`${line}\n`);
  if (!o.json) out(`Build ${created.id} of ${o.app} queued`);
  if (!o.follow) {
    if (o.json) out(JSON.stringify(created));
    return 0;
  }
  const ended = await followBuild(api, created.id, o.json ? () => undefined : (text) => ctx.write(text));
  if (o.json) out(JSON.stringify(ended));
  else {
    const what =
      ended.image ?? (ended.artifact ? `${ended.artifact.digest.slice(0, 19)}… (${formatBytes(ended.artifact.bytes ?? 0)})` : '');
    out(
      `Build ${ended.id} ${ended.status}${ended.duration_seconds !== null ? ` in ${ended.duration_seconds} s` : ''}${ended.status === 'succeeded' ? `: ${what}` : ended.message ? `: ${ended.message}` : ''}`,
    );
    if (ended.deploy_id) out(`Deploy ${ended.deploy_id} started (GET /deploys/${ended.deploy_id})`);
    if (ended.deploy_error) out(`Not deployed: ${ended.deploy_error}`);
  }
  return ended.status === 'succeeded' ? 0 : 1;
}

export const buildGroup: CommandGroup = {
  name: 'build',
  synopsis: `  svc build [DIR] --app APP [--deploy] [--git URL [--ref REF] [--path DIR]] [--no-follow] [--json]
                                              build a directory (or a Git repository) for an app,
                                              streaming its log; exits 0 when it succeeded`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      app: { type: 'string' },
      deploy: { type: 'boolean' },
      git: { type: 'string' },
      ref: { type: 'string' },
      path: { type: 'string' },
      'no-follow': { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (values.help) return printUsage(this, ctx);
    if (!values.app) throw new GroupUsageError('--app names the app to build for', usage);
    const [dir, extra] = positionals;
    if (extra !== undefined) throw new GroupUsageError(`one directory at a time (got ${dir} and ${extra})`, usage);
    if (values.git && dir) throw new GroupUsageError('give a directory or --git, not both', usage);
    if ((values.ref || values.path) && !values.git) throw new GroupUsageError('--ref and --path go with --git', usage);
    return buildCommand(connect(ctx, values.token), ctx, {
      app: values.app,
      ...(dir ? { dir } : {}),
      ...(values.git
        ? { git: { url: values.git, ...(values.ref ? { ref: values.ref } : {}), ...(values.path ? { path: values.path } : {}) } }
        : {}),
      deploy: values.deploy === true,
      follow: !values['no-follow'],
      json: values.json === true,
    });
  },
};
