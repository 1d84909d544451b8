// The build container of a Build's Job (controllers/build/): the source is already in the workspace
// (the Job's `source` init container fetched it); this plans it (lib/builds/plan.ts), runs the
// plan's install and build commands with the app's caches as HOME, packs the output and sends it to
// the platform (the machine listener, with a credential for this build only: api/builds/endpoint.ts).
// Everything it says goes to its log, which is the build's log; why it failed also goes to the
// termination message, which the controller puts in the Build's status (a reason, never a result:
// results travel by the upload).
//
// Env: SVC_BUILD_WORKSPACE (the source), SVC_BUILD_REPORT_URL (`<listener>/builds/<ns>/<build>`),
// SVC_BUILD_TOKEN, HOME (the app's build cache).
import { spawn } from 'node:child_process';
import {
  cpSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { create as tarCreate } from 'tar';
import { planBuild, PlanError, type BuildPlan } from '../lib/builds/plan.js';
import { clone } from './clone.js';
import { treeOnDisk } from '../lib/builds/tree.js';

const workspace = process.env.SVC_BUILD_WORKSPACE ?? '/workspace';
const reportUrl = process.env.SVC_BUILD_REPORT_URL;
const token = process.env.SVC_BUILD_TOKEN;
const home = process.env.HOME ?? '/tmp';

const say = (line: string) => process.stdout.write(`==> ${line}\n`);

/** Why a build failed, as the Build's status says it (reason) and people read it (message). */
type FailureReason = 'NothingToBuild' | 'CommandFailed' | 'NoOutput' | 'Unsupported' | 'BuilderFailed';

class BuildFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

function fail(message: string, reason: FailureReason = 'BuilderFailed'): never {
  throw new BuildFailure(reason, message);
}

/** Why a request failed, with the socket error under undici's "fetch failed" (ECONNRESET, ...). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  const detail = cause instanceof Error ? ((cause as NodeJS.ErrnoException).code ?? cause.message) : undefined;
  return detail ? `${err.message} (${detail})` : err.message;
}

/** How long a transfer to the platform is retried (a listener restarting, a pod's network coming up). */
const sendDeadlineMs = Number(process.env.SVC_BUILD_SEND_DEADLINE_MS ?? 60_000);

/**
 * Sends the plan or the output. Both are idempotent (the platform answers a repeated identical
 * output as it answered the first), so a connection that fails or a 5XX/429 is retried with
 * backoff until `sendDeadlineMs`; a 4XX is the platform's final word.
 */
async function send(
  what: 'plan' | 'output',
  body: () => string | Readable,
  headers: Record<string, string>,
): Promise<Record<string, unknown>> {
  if (!reportUrl || !token) fail('SVC_BUILD_REPORT_URL and SVC_BUILD_TOKEN are not set: nowhere to send the result');
  const started = Date.now();
  for (let attempt = 1, backoff = 250; ; attempt++, backoff = Math.min(backoff * 2, 4000)) {
    let why: string;
    try {
      const b = body();
      const res = await fetch(`${reportUrl}/${what}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, ...headers },
        body: b instanceof Readable ? (Readable.toWeb(b) as ReadableStream) : b,
        duplex: 'half',
      });
      const text = await res.text();
      if (res.ok) return text ? (JSON.parse(text) as Record<string, unknown>) : {};
      if (res.status < 500 && res.status !== 429) fail(`the platform refused the ${what} (${res.status}): ${text.slice(0, 500)}`);
      why = `the platform answered ${res.status}: ${text.slice(0, 200)}`;
    } catch (err) {
      if (err instanceof BuildFailure) throw err;
      why = describe(err);
    }
    if (Date.now() - started + backoff > sendDeadlineMs)
      fail(`sending the ${what} failed ${attempt} times in ${Math.round((Date.now() - started) / 1000)} s; last: ${why}`);
    say(`sending the ${what} failed (${why}); retrying in ${(backoff / 1000).toFixed(2)} s`);
    await new Promise((r) => setTimeout(r, backoff));
  }
}

/** Packs `entries` of `cwd` into a gzipped tarball file (sent from there, so a retry sends it again). */
async function pack(
  cwd: string,
  entries: string[],
  opts: { prefix?: string; filter?: (p: string) => boolean } = {},
): Promise<{ file: string; bytes: number }> {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'svc-output-')), 'output.tar.gz');
  await pipeline(tarCreate({ gzip: true, cwd, portable: true, ...opts }, entries), createWriteStream(file));
  return { file, bytes: statSync(file).size };
}

const output = (packed: { file: string; bytes: number }, kind: 'image' | 'artifact') =>
  send('output', () => createReadStream(packed.file), {
    'content-type': 'application/gzip',
    'content-length': String(packed.bytes),
    'x-svc-output': kind,
  });

/** Bytes under `dir` (apparent sizes), for the cache line of the log; 0 when there is none. */
function sizeOf(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) total += statSync(p).size;
    }
  };
  walk(dir);
  return total;
}

function run(command: string, opts: { cwd?: string; env?: Record<string, string>; argv?: string[] } = {}): Promise<void> {
  say(`$ ${command}`);
  const started = Date.now();
  const cwd = opts.cwd ?? workspace;
  return new Promise((resolve, reject) => {
    // Through a shell, as a package.json script or a Procfile line would be; the app's own
    // binaries first on PATH.
    const [file, ...args] = opts.argv ?? ['sh', '-c', command];
    const child = spawn(file!, args, {
      cwd,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        ...process.env,
        CI: 'true',
        PATH: `${cwd}/node_modules/.bin:${cwd}/.python/bin:${process.env.PATH ?? ''}`,
        PYTHONPATH: `${cwd}/.python`,
        ...opts.env,
        SVC_BUILD_TOKEN: '',
      },
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) {
        say(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        resolve();
      } else reject(new BuildFailure('CommandFailed', `\`${command}\` ${signal ? `was killed by ${signal}` : `exited with code ${code}`}`));
    });
  });
}

async function build(): Promise<void> {
  const started = Date.now();
  let plan: BuildPlan;
  try {
    const tree = treeOnDisk(workspace);
    say(`source: ${tree.paths.length} files`);
    plan = planBuild(tree);
  } catch (err) {
    if (err instanceof PlanError) fail(err.message, 'NothingToBuild');
    throw err;
  }
  say(`plan: ${plan.kind} (${plan.why})`);
  process.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
  await send('plan', () => JSON.stringify(plan), { 'content-type': 'application/json' });
  if (plan.kind === 'compose')
    fail(`${plan.compose}: a compose file is deployed as it is (POST /apps/{app}/deploy with compose), not built`, 'Unsupported');
  if (plan.docker) return dockerBuild(plan, started);

  const cached = plan.caches.reduce((n, c) => n + sizeOf(path.join(home, c)), 0);
  say(
    cached
      ? `dependency cache: ${(cached / 1048576).toFixed(1)} MiB from earlier builds of this app`
      : 'dependency cache: empty (the first build of this app, or its cache was cleared)',
  );
  for (const command of [...plan.install, ...plan.build]) await run(command);

  const out = path.resolve(workspace, plan.outputDir);
  if (!out.startsWith(path.resolve(workspace))) fail(`the output directory ${plan.outputDir} is outside the source`);
  if (!existsSync(out) || !statSync(out).isDirectory())
    fail(`the build made no ${plan.outputDir}/ directory: is that where it writes its output?`, 'NoOutput');
  // Never the VCS or the platform's marker; node_modules only into an image (a site's output has none).
  const entries = readdirSync(out).filter(
    (e) => e !== '.git' && !e.startsWith('.svc-') && (plan.produces.type === 'image' || e !== 'node_modules'),
  );
  if (!entries.length) fail(`${plan.outputDir}/ is empty after the build`, 'NoOutput');
  // An image's layer is the whole tree under app/ (dependencies included); an artifact is the output.
  const image = plan.produces.type === 'image';
  say(`packing ${image ? 'the service' : `${plan.outputDir}/`} (${entries.length} entries)`);
  const packed = await pack(out, entries, { ...(image ? { prefix: 'app' } : {}), filter: (p) => !/(^|\/)\.git(\/|$)/.test(p) });
  const result = await output(packed, image ? 'image' : 'artifact');
  say(`output stored: ${String(result.image ?? result.digest)} (${String(result.bytes)} bytes)`);
  say(`build succeeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Names in a COPY source matched as Docker does within one directory (`*`, `?`). */
function expandSource(source: string): string[] {
  const clean = source.replace(/^\.\//, '').replace(/\/+$/, '') || '.';
  if (!/[*?]/.test(clean)) return [clean];
  const dir = path.posix.dirname(clean);
  const pattern = new RegExp(
    `^${path.posix
      .basename(clean)
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]')}$`,
  );
  const names = existsSync(path.join(workspace, dir)) ? readdirSync(path.join(workspace, dir)).filter((n) => pattern.test(n)) : [];
  return names.map((n) => (dir === '.' ? n : `${dir}/${n}`));
}

/**
 * A Dockerfile's steps (lib/builds/dockerfile.ts), run as this container's non-root user: WORKDIR
 * and COPY into a directory standing for the image's root, RUN there with the ENV so far. What the
 * steps made under it is the image's layer; the base is the platform's (it has Node.js and Python).
 */
async function dockerBuild(plan: BuildPlan, started: number): Promise<void> {
  const d = plan.docker!;
  const root = path.join(workspace, '.svc-rootfs');
  const inRoot = (p: string) => path.join(root, p);
  mkdirSync(root, { recursive: true });
  const env: Record<string, string> = {};
  let cwd = '/';
  for (const step of d.steps) {
    if (step.op === 'workdir') {
      cwd = step.path;
      mkdirSync(inRoot(cwd), { recursive: true });
    } else if (step.op === 'env') {
      env[step.name] = step.value;
    } else if (step.op === 'copy') {
      const sources = step.sources.flatMap(expandSource);
      if (!sources.length) fail(`COPY ${step.sources.join(' ')}: no such file in the source`, 'CommandFailed');
      const toDir = step.dest.endsWith('/') || sources.length > 1;
      say(`COPY ${step.sources.join(' ')} ${step.dest}`);
      for (const src of sources) {
        const from = path.join(workspace, src);
        if (!existsSync(from)) fail(`COPY ${src}: no such file in the source`, 'CommandFailed');
        const isDir = statSync(from).isDirectory();
        const to = isDir ? inRoot(step.dest) : toDir ? path.join(inRoot(step.dest), path.basename(src)) : inRoot(step.dest);
        mkdirSync(isDir ? to : path.dirname(to), { recursive: true });
        // A directory's entries one by one: never the VCS, the platform's own files, or the image's
        // root (inside the source) into itself.
        const kept = (name: string) => name !== '.git' && !name.startsWith('.svc-');
        if (isDir)
          for (const name of readdirSync(from).filter(kept)) cpSync(path.join(from, name), path.join(to, name), { recursive: true });
        else cpSync(from, to);
      }
    } else {
      await run(step.shell ?? step.exec!.join(' '), { cwd: inRoot(cwd), env, ...(step.exec ? { argv: step.exec } : {}) });
    }
  }
  say("packing the image's layer");
  const entries = readdirSync(root);
  if (!entries.length) fail('the Dockerfile made no files', 'NoOutput');
  const result = await output(await pack(root, entries), 'image');
  say(`output stored: ${String(result.image ?? result.digest)} (${String(result.bytes)} bytes)`);
  say(`build succeeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Runs `step`; a failure is said in the log and, as {reason, message}, in the termination message. */
export async function report(step: () => Promise<void>): Promise<void> {
  try {
    await step();
  } catch (err) {
    const failure =
      err instanceof BuildFailure
        ? err
        : new BuildFailure('BuilderFailed', `the builder failed: ${err instanceof Error ? err.message : String(err)}`);
    say(`build failed: ${failure.message}`);
    try {
      writeFileSync('/dev/termination-log', JSON.stringify({ reason: failure.reason, message: failure.message.slice(0, 2000) }));
    } catch {
      // Not in a container (a test): the log says it.
    }
    process.exitCode = 1;
  }
}

if (process.argv[2] === 'clone') await report(() => clone(say, (m) => fail(m, 'BuilderFailed')));
else await report(build);
