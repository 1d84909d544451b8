// `svc deploy`: packs a directory (or names an image), sends it to the platform's API and follows
// the deploy until it is live or failed, printing progress on the way (POST /apps/{appID}/deploy,
// then GET /deploys/{deployID} and GET /apps/{appID}). It uses only the public API.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { create as tarCreate } from 'tar';
import { parse as parseYaml } from 'yaml';
import { body, createApiClient, sendBytes, type ApiClient, type paths } from '../lib/client/index.js';
import { GroupUsageError, parseGroupArgs, printUsage, secondsOption, type ApiTarget, type CommandGroup } from './command.js';
import { formatBytes } from './table.js';

const usage = `usage:
  svc deploy APP [DIR] [--image REF] [--no-wait] [--timeout 300]
                                               deploy a directory (packed as .tar.gz; a compose file
                                               that runs services deploys as that file) or an image,
                                               and follow it until it is live
  --image REF   deploy this container image instead of a directory
  --no-wait     print the deploy's id once it is accepted, and do not follow it
  --timeout S   how long to follow it before giving up (default 300 s)
example:
  svc deploy shop ./dist`;

export interface DeployOptions extends ApiTarget {
  app: string;
  dir?: string;
  image?: string;
  wait: boolean;
  timeoutMs: number;
  out: (line: string) => void;
}

/** A deploy as the API answers it (GET /deploys/{deployID}). */
type DeployRecord = paths['/deploys/{deployID}']['get']['responses'][200]['content']['application/json'];
type DeployRequest = NonNullable<paths['/apps/{appID}/deploy']['post']['requestBody']>['content']['application/json'];

async function treeSize(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}

const composeNames = ['compose.yaml', 'compose.yml', 'docker-compose.yaml', 'docker-compose.yml'];

/**
 * A directory whose compose file runs container services deploys as that file (its services run
 * their images), with the env files it names; the API validates the rest. Undefined: not one.
 */
async function composeDeploy(dir: string): Promise<{ file: string; services: string[]; body: DeployRequest } | undefined> {
  for (const file of composeNames) {
    const text = await readFile(path.join(dir, file), 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch {
      return { file, services: [], body: { compose: text } }; // the API says what is wrong with it
    }
    const services = (doc as { services?: Record<string, Record<string, unknown> | null> } | null)?.services;
    const running = Object.entries(services ?? {}).filter(([, v]) => v && Object.keys(v).some((k) => k !== 'x-svc'));
    if (!running.length) return undefined; // only x-svc: it configures the files deployed with it
    const envFiles = new Set<string>();
    for (const [, v] of running) {
      for (const e of ([] as unknown[]).concat(v!.env_file ?? [])) {
        const p = typeof e === 'string' ? e : (e as { path?: unknown } | null)?.path;
        if (typeof p === 'string') envFiles.add(p.replace(/^\.\//, ''));
      }
    }
    const files: Record<string, string> = {};
    for (const f of envFiles) {
      const content = await readFile(path.join(dir, f), 'utf8').catch(() => undefined);
      if (content !== undefined) files[f] = content;
    }
    return { file, services: running.map(([n]) => n), body: { compose: text, ...(Object.keys(files).length ? { files } : {}) } };
  }
  return undefined;
}

export async function deployCommand(o: DeployOptions): Promise<DeployRecord> {
  const api = createApiClient({ baseUrl: o.apiUrl, token: o.token });
  const params = { params: { path: { appID: o.app } } };
  const started = Date.now();
  let deploy: DeployRecord;
  if (o.image) {
    o.out(`Deploying image ${o.image} to ${o.app}`);
    deploy = await body(api.POST('/apps/{appID}/deploy', { ...params, body: { image: o.image } }));
  } else {
    const dir = path.resolve(o.dir ?? '.');
    if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new GroupUsageError(`${dir} is not a directory`, usage);
    const compose = await composeDeploy(dir);
    if (compose) {
      o.out(`Deploying ${compose.file} to ${o.app}${compose.services.length ? `: services ${compose.services.join(', ')}` : ''}`);
      deploy = await body(api.POST('/apps/{appID}/deploy', { ...params, body: compose.body }));
      return follow(o, api, deploy, started);
    }
    const { files, bytes } = await treeSize(dir);
    o.out(`Packing ${dir}: ${files} files, ${formatBytes(bytes)}`);
    // Streamed: the archive is never held in memory whole.
    const archive = tarCreate({ gzip: true, cwd: dir, portable: true, follow: false }, ['.']) as unknown as AsyncIterable<Buffer>;
    const stream = Readable.toWeb(Readable.from(archive)) as ReadableStream<Uint8Array>;
    // body: '' stands for the archive, which sendBytes sends (the document types a .tar.gz as a string).
    deploy = await body(api.POST('/apps/{appID}/deploy', { ...params, body: '', ...sendBytes(stream, 'application/gzip') }));
  }
  return follow(o, api, deploy, started);
}

/** Prints the deploy's progress until it is live (or failed, or the time is up). */
async function follow(o: DeployOptions, api: ApiClient, deploy: DeployRecord, started: number): Promise<DeployRecord> {
  o.out(`Deploy ${deploy.id} accepted: ${deploy.kind}${deploy.digest ? ` ${deploy.digest.slice(0, 19)}…` : ''}`);
  if (!o.wait) return deploy;
  let last = '';
  const deadline = Date.now() + o.timeoutMs;
  while (Date.now() < deadline) {
    const [d, app] = await Promise.all([
      body(api.GET('/deploys/{deployID}', { params: { path: { deployID: deploy.id } } })),
      body(api.GET('/apps/{appID}', { params: { path: { appID: o.app } } })),
    ]);
    const line =
      d.status === 'deploying'
        ? `  ${d.status}: ${app.rollout ?? 'waiting for the controller'}; ${app.ready} machines ready`
        : `  ${d.status}`;
    if (line !== last) o.out((last = line));
    if (d.status === 'live') {
      o.out(`Live in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return d;
    }
    if (d.status === 'failed')
      throw new Error(`deploy ${d.id} failed: ${d.reason ?? 'no reason given'} (the previous deploy keeps serving)`);
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`deploy ${deploy.id} not live after ${o.timeoutMs / 1000} s; follow it with GET /deploys/${deploy.id}`);
}

export const deployGroup: CommandGroup = {
  name: 'deploy',
  synopsis: `  svc deploy APP [DIR] [--image REF] [--no-wait] [--timeout 300]
                                              deploy a directory (packed as .tar.gz) or an image, and
                                              follow it until it is live`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      image: { type: 'string' },
      'no-wait': { type: 'boolean' },
      timeout: { type: 'string' },
    });
    if (values.help) return printUsage(this, ctx);
    const [app, dir, extra] = positionals;
    if (!app) throw new GroupUsageError('name the app to deploy', usage);
    if (extra !== undefined) throw new GroupUsageError(`one directory at a time (got ${dir} and ${extra})`, usage);
    if (values.image && dir) throw new GroupUsageError('give a directory or --image, not both', usage);
    const timeout = secondsOption(values.timeout, '--timeout', usage) ?? 300;
    await deployCommand({
      app,
      ...(dir ? { dir } : {}),
      ...(values.image ? { image: values.image } : {}),
      ...ctx.target(values.token),
      wait: !values['no-wait'],
      timeoutMs: timeout * 1000,
      out: (line) => ctx.out(line),
    });
    return 0;
  },
};
