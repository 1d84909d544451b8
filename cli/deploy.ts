// `svc deploy`: packs a directory (or names an image), sends it to the platform's API and follows
// the deploy until it is live or failed, printing progress on the way. It uses only the public API.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { create as tarCreate } from 'tar';
import { parse as parseYaml } from 'yaml';
import { UsageError } from './token-commands.js';
import { formatBytes } from './table.js';

export interface DeployOptions {
  app: string;
  dir?: string;
  image?: string;
  apiUrl: string;
  token: string;
  wait: boolean;
  timeoutMs: number;
  out: (line: string) => void;
}

interface DeployRecord {
  id: string;
  status: string;
  reason: string | null;
  kind: string;
  digest: string | null;
}

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
async function composeDeploy(
  dir: string,
): Promise<{ file: string; services: string[]; body: { compose: string; files?: Record<string, string> } } | undefined> {
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
  const headers = { authorization: `Bearer ${o.token}` };
  const call = async <T>(method: string, p: string, init: RequestInit = {}): Promise<T> => {
    const res = await fetch(`${o.apiUrl}${p}`, { method, ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
    const text = await res.text();
    if (!res.ok)
      throw new Error(
        `${method} ${p}: ${res.status} ${(() => {
          try {
            return (JSON.parse(text) as { error: string }).error;
          } catch {
            return text;
          }
        })()}`,
      );
    return JSON.parse(text) as T;
  };
  const started = Date.now();
  let deploy: DeployRecord;
  if (o.image) {
    o.out(`Deploying image ${o.image} to ${o.app}`);
    deploy = await call('POST', `/apps/${o.app}/deploy`, {
      body: JSON.stringify({ image: o.image }),
      headers: { 'content-type': 'application/json' },
    });
  } else {
    const dir = path.resolve(o.dir ?? '.');
    if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new UsageError(`${dir} is not a directory`);
    const compose = await composeDeploy(dir);
    if (compose) {
      o.out(`Deploying ${compose.file} to ${o.app}${compose.services.length ? `: services ${compose.services.join(', ')}` : ''}`);
      deploy = await call('POST', `/apps/${o.app}/deploy`, {
        body: JSON.stringify(compose.body),
        headers: { 'content-type': 'application/json' },
      });
      return follow(o, deploy, call, started);
    }
    const { files, bytes } = await treeSize(dir);
    o.out(`Packing ${dir}: ${files} files, ${formatBytes(bytes)}`);
    // Streamed: the archive is never held in memory whole.
    const archive = tarCreate({ gzip: true, cwd: dir, portable: true, follow: false }, ['.']) as unknown as NodeJS.ReadableStream;
    deploy = await call('POST', `/apps/${o.app}/deploy`, {
      body: Readable.toWeb(Readable.from(archive as AsyncIterable<Buffer>)) as ReadableStream,
      headers: { 'content-type': 'application/gzip' },
      duplex: 'half',
    });
  }
  return follow(o, deploy, call, started);
}

/** Prints the deploy's progress until it is live (or failed, or the time is up). */
async function follow(
  o: DeployOptions,
  deploy: DeployRecord,
  call: <T>(method: string, p: string, init?: RequestInit) => Promise<T>,
  started: number,
): Promise<DeployRecord> {
  o.out(`Deploy ${deploy.id} accepted: ${deploy.kind}${deploy.digest ? ` ${deploy.digest.slice(0, 19)}…` : ''}`);
  if (!o.wait) return deploy;
  let last = '';
  const deadline = Date.now() + o.timeoutMs;
  while (Date.now() < deadline) {
    const [d, app] = await Promise.all([
      call<DeployRecord>('GET', `/deploys/${deploy.id}`),
      call<{ ready: string; rollout: string | null }>('GET', `/apps/${o.app}`),
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
