// `svc build` and `svc builds`: build a directory (packed as .tar.gz, without dependency and VCS
// directories) or a Git repository for an app, streaming the build's log as it runs and exiting with
// its result; read, list and cancel builds. Only the public API (docs/api/builds.md).
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { create as tarCreate } from 'tar';
import { callJson, request, type ApiTarget } from './api.js';
import { formatBytes, table } from './table.js';
import { UsageError } from './token-commands.js';

interface BuildRecord {
  id: string;
  app: string;
  deploy: boolean;
  status: 'queued' | 'building' | 'succeeded' | 'failed' | 'canceled';
  reason: string | null;
  message: string | null;
  artifact: { digest: string; bytes: number | null } | null;
  image: string | null;
  reused_from: string | null;
  deploy_id: string | null;
  deploy_error: string | null;
  created_at: string;
  duration_seconds: number | null;
}

/** Directories a source upload leaves out: what the build makes again, and the VCS. */
const leftOut = new Set(['node_modules', '.git', '.python', '__pycache__', '.venv']);

export interface BuildOptions {
  dir?: string;
  app: string;
  deploy: boolean;
  git?: { url: string; ref?: string; path?: string };
  follow: boolean;
  json: boolean;
  out: (text: string) => void;
}

/** Streams the build's log to `out` until it ends; answers the build as it ended. */
async function follow(t: ApiTarget, id: string, out: (text: string) => void): Promise<BuildRecord> {
  const res = await request(t, 'GET', `/builds/${id}/logs?follow=true`);
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) out(decoder.decode(chunk, { stream: true }));
  // The log ends with the build; its record may lag the last line by a moment.
  // A succeeded build asked to deploy is deployed a moment after it ends: wait for that too.
  for (let i = 0; i < 40; i++) {
    const b = await callJson<BuildRecord>(t, 'GET', `/builds/${id}`);
    const settled =
      !['queued', 'building'].includes(b.status) && !(b.status === 'succeeded' && b.deploy && !b.deploy_id && !b.deploy_error);
    if (settled) return b;
    await new Promise((r) => setTimeout(r, 250));
  }
  return callJson<BuildRecord>(t, 'GET', `/builds/${id}`);
}

export async function buildCommand(t: ApiTarget, o: BuildOptions): Promise<number> {
  let created: BuildRecord;
  if (o.git) {
    created = await callJson<BuildRecord>(t, 'POST', '/builds', { app: o.app, deploy: o.deploy, git: o.git });
  } else {
    const dir = path.resolve(o.dir ?? '.');
    if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new UsageError(`${dir} is not a directory`);
    const archive = tarCreate(
      { gzip: true, cwd: dir, portable: true, follow: false, filter: (p) => !p.split('/').some((part) => leftOut.has(part)) },
      ['.'],
    ) as unknown as AsyncIterable<Buffer>;
    const res = await request(t, 'POST', `/builds?app=${encodeURIComponent(o.app)}${o.deploy ? '&deploy=true' : ''}`, {
      body: Readable.toWeb(Readable.from(archive)) as ReadableStream,
      headers: { 'content-type': 'application/gzip' },
    });
    created = (await res.json()) as BuildRecord;
  }
  if (!o.json) o.out(`Build ${created.id} of ${o.app} queued\n`);
  if (!o.follow) {
    if (o.json) o.out(`${JSON.stringify(created)}\n`);
    return 0;
  }
  const ended = await follow(t, created.id, o.json ? () => undefined : o.out);
  if (o.json) o.out(`${JSON.stringify(ended)}\n`);
  else {
    const what =
      ended.image ?? (ended.artifact ? `${ended.artifact.digest.slice(0, 19)}… (${formatBytes(ended.artifact.bytes ?? 0)})` : '');
    o.out(
      `Build ${ended.id} ${ended.status}${ended.duration_seconds !== null ? ` in ${ended.duration_seconds} s` : ''}${ended.status === 'succeeded' ? `: ${what}` : ended.message ? `: ${ended.message}` : ''}\n`,
    );
    if (ended.deploy_id) o.out(`Deploy ${ended.deploy_id} started (GET /deploys/${ended.deploy_id})\n`);
    if (ended.deploy_error) o.out(`Not deployed: ${ended.deploy_error}\n`);
  }
  return ended.status === 'succeeded' ? 0 : 1;
}

export async function buildsCommand(
  t: ApiTarget,
  command: string | undefined,
  args: string[],
  o: { follow: boolean; json: boolean; out: (text: string) => void },
): Promise<number> {
  switch (command) {
    case 'logs': {
      const [id] = args;
      if (!id) throw new UsageError('svc builds logs ID [-f]');
      const res = await request(t, 'GET', `/builds/${encodeURIComponent(id)}/logs${o.follow ? '?follow=true' : ''}`);
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) o.out(decoder.decode(chunk, { stream: true }));
      return 0;
    }
    case 'get': {
      const [id] = args;
      if (!id) throw new UsageError('svc builds get ID');
      const b = await callJson<BuildRecord>(t, 'GET', `/builds/${encodeURIComponent(id)}`);
      o.out(
        o.json
          ? `${JSON.stringify(b)}\n`
          : `${b.id} ${b.app} ${b.status}${b.reason ? ` (${b.reason})` : ''}${b.message ? `: ${b.message}` : ''}\n`,
      );
      return 0;
    }
    case 'ls': {
      const [app] = args;
      if (!app) throw new UsageError('svc builds ls APP');
      const { builds } = await callJson<{ builds: BuildRecord[] }>(t, 'GET', `/apps/${encodeURIComponent(app)}/builds`);
      if (o.json) o.out(`${JSON.stringify(builds)}\n`);
      else
        for (const line of table([
          ['ID', 'STATUS', 'REASON', 'SECONDS', 'CREATED'],
          ...builds.map((b) => [
            b.id,
            b.status,
            b.reason ?? '-',
            b.duration_seconds === null ? '-' : String(b.duration_seconds),
            b.created_at,
          ]),
        ]))
          o.out(`${line}\n`);
      return 0;
    }
    case 'cancel': {
      const [id] = args;
      if (!id) throw new UsageError('svc builds cancel ID');
      const b = await callJson<BuildRecord>(t, 'POST', `/builds/${encodeURIComponent(id)}/cancel`);
      o.out(`${b.id} ${b.status}\n`);
      return 0;
    }
    default:
      throw new UsageError('svc builds logs ID [-f] | get ID | ls APP | cancel ID');
  }
}

/** `svc import REPO [--ref R] [--name N] [--path P]`: imports a repository, streams its first build. */
export async function importCommand(
  t: ApiTarget,
  o: { repository: string; ref?: string; name?: string; path?: string; preview: boolean; json: boolean; out: (text: string) => void },
): Promise<number> {
  if (o.preview) {
    const q = new URLSearchParams({ repository: o.repository, ...(o.ref ? { ref: o.ref } : {}), ...(o.path ? { path: o.path } : {}) });
    const p = await callJson<{
      ref: string;
      commit: string;
      plan: { kind: string; why: string } | null;
      problem: string | null;
      services: Array<{ name: string }>;
      auth_from: string;
    }>(t, 'GET', `/apps/imports/preview?${q.toString()}`);
    if (o.json) o.out(`${JSON.stringify(p)}\n`);
    else
      o.out(
        `${o.repository} at ${p.ref} (${p.commit.slice(0, 12)}): ${p.plan ? `${p.plan.kind}, ${p.plan.why}` : `nothing to build: ${p.problem}`}${p.services.length ? `; services ${p.services.map((s) => s.name).join(', ')}` : ''}; auth: ${p.auth_from}\n`,
      );
    return p.plan ? 0 : 1;
  }
  const made = await callJson<{
    app: { name: string };
    build: BuildRecord;
    repository: { default_branch: string; hook_path: string; hook_secret: string };
  }>(t, 'POST', '/apps/imports', {
    repository: o.repository,
    ...(o.ref ? { ref: o.ref } : {}),
    ...(o.name ? { name: o.name } : {}),
    ...(o.path ? { path: o.path } : {}),
  });
  if (o.json) {
    o.out(`${JSON.stringify(made)}\n`);
    return 0;
  }
  o.out(`App ${made.app.name} imported from ${o.repository} (default branch ${made.repository.default_branch})\n`);
  o.out(
    `Push webhook: POST <API address>${made.repository.hook_path}, secret ${made.repository.hook_secret} (shown once; the repository is also polled every minute)\n`,
  );
  const ended = await follow(t, made.build.id, o.out);
  o.out(`Build ${ended.id} ${ended.status}${ended.message ? `: ${ended.message}` : ''}\n`);
  return ended.status === 'succeeded' ? 0 : 1;
}
