// `svc deploy`: packs a directory (or names an image), sends it to the platform's API and follows
// the deploy until it is live or failed, printing progress on the way. It uses only the public API.
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { create as tarCreate } from 'tar';
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

export async function deployCommand(o: DeployOptions): Promise<DeployRecord> {
  const headers = { authorization: `Bearer ${o.token}` };
  const call = async <T>(method: string, p: string, init: RequestInit = {}): Promise<T> => {
    const res = await fetch(`${o.apiUrl}${p}`, { method, ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${(() => { try { return (JSON.parse(text) as { error: string }).error; } catch { return text; } })()}`);
    return JSON.parse(text) as T;
  };
  const started = Date.now();
  let deploy: DeployRecord;
  if (o.image) {
    o.out(`Deploying image ${o.image} to ${o.app}`);
    deploy = await call('POST', `/apps/${o.app}/deploy`, { body: JSON.stringify({ image: o.image }), headers: { 'content-type': 'application/json' } });
  } else {
    const dir = path.resolve(o.dir ?? '.');
    if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new UsageError(`${dir} is not a directory`);
    const { files, bytes } = await treeSize(dir);
    o.out(`Packing ${dir}: ${files} files, ${formatBytes(bytes)}`);
    // Streamed: the archive is never held in memory whole.
    const archive = tarCreate({ gzip: true, cwd: dir, portable: true, follow: false }, ['.']) as unknown as NodeJS.ReadableStream;
    deploy = await call('POST', `/apps/${o.app}/deploy`, {
      body: Readable.toWeb(Readable.from(archive as AsyncIterable<Buffer>)) as ReadableStream,
      headers: { 'content-type': 'application/gzip' },
      duplex: 'half',
    } as RequestInit);
  }
  o.out(`Deploy ${deploy.id} accepted: ${deploy.kind}${deploy.digest ? ` ${deploy.digest.slice(0, 19)}…` : ''}`);
  if (!o.wait) return deploy;
  let last = '';
  const deadline = Date.now() + o.timeoutMs;
  while (Date.now() < deadline) {
    const [d, app] = await Promise.all([call<DeployRecord>('GET', `/deploys/${deploy.id}`), call<{ ready: string; rollout: string | null }>('GET', `/apps/${o.app}`)]);
    const line = d.status === 'deploying' ? `  ${d.status}: ${app.rollout ?? 'waiting for the controller'}; ${app.ready} machines ready` : `  ${d.status}`;
    if (line !== last) o.out((last = line));
    if (d.status === 'live') {
      o.out(`Live in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return d;
    }
    if (d.status === 'failed') throw new Error(`deploy ${d.id} failed: ${d.reason ?? 'no reason given'} (the previous deploy keeps serving)`);
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`deploy ${deploy.id} not live after ${o.timeoutMs / 1000} s; follow it with GET /deploys/${deploy.id}`);
}
