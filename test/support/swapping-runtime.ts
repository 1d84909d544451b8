// A runtime process serving fetched artifacts and taking swap orders, as a machine runs it
// (runtime/main.ts, runtime/control.ts), against a local artifact store: for the unit and attack
// tests of content swaps. The store answers `/artifacts/<digest>` for what `publish` put there.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { packTree } from '../../lib/artifacts/tarball.js';
import { controlKeys, signSwapOrder, swapOrderTtlMs, type SwapOrder } from '../../lib/machine-control.js';
import { repoRoot } from '../../lib/paths.js';
import { supervise, type Supervised } from './child.js';
import { freePort } from './ports.js';
import { scratchDir } from './scratch.js';

export const controlKey = controlKeys(Buffer.alloc(32, 3));
/** The machine's Pod: its name and uid, as the downward API gives them. */
export const machinePod = { name: 'site-m0-abc', uid: '5f0c3a52-0b7e-4d55-9a55-2f8e3c2d1a01' };

export class ArtifactStore {
  readonly artifacts = new Map<string, Buffer>();
  readonly hits: string[] = [];
  private server: Server | undefined;
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const digest = (req.url ?? '').replace(/^\/artifacts\//, '');
      this.hits.push(digest);
      const body = this.artifacts.get(digest);
      if (!body) return void res.writeHead(404).end('no such artifact');
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/artifacts`;
    return this;
  }

  /** Packs `files` and serves them; returns the digest. */
  async publish(files: Record<string, string>): Promise<string> {
    const packed = await packTree(files);
    const digest = `sha256:${createHash('sha256').update(packed).digest('hex')}`;
    this.artifacts.set(digest, packed);
    return digest;
  }

  close(): void {
    this.server?.close();
  }
}

export interface Machine {
  /** The runtime's process id. */
  pid: number;
  port: number;
  controlPort: number;
  root: string;
  proc: Supervised;
  /** The signed order for `digest` (this pod, now, from this store), with `change` applied before it is signed. */
  order(digest: string, change?: Partial<SwapOrder>): string;
  /** POSTs an order (or any body) to the control port. */
  send(body: string): Promise<{ status: number; body: { error?: string; how?: string; digest?: string } }>;
  get(p?: string): Promise<{ status: number; body: string }>;
}

/** Starts the runtime on `digest` (a root of its own unless given one: a restarted container) and waits until it serves. */
export async function startMachine(
  store: ArtifactStore,
  digest: string,
  opts: { root?: string; kind?: string; env?: Record<string, string>; controlPort?: number } = {},
): Promise<Machine> {
  const root = opts.root ?? scratchDir('svc-swap-');
  const port = await freePort();
  const controlPort = opts.controlPort ?? (await freePort());
  const { name: pod, uid } = machinePod;
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist/runtime/main.js'), 'serve'], {
    env: {
      PATH: process.env.PATH,
      SVC_SITE_ROOT: root,
      SVC_APP_KIND: opts.kind ?? 'static',
      HOST: '127.0.0.1',
      PORT: String(port),
      SVC_ARTIFACT_URL: `${store.base}/${digest}`,
      SVC_ARTIFACT_DIGEST: digest,
      SVC_FETCH_DEADLINE_MS: '500',
      SVC_CONTROL_PORT: String(controlPort),
      SVC_CONTROL_KEY: controlKey.publicKey,
      SVC_POD_NAME: pod,
      SVC_POD_UID: uid,
      SVC_DRAIN_MS: '0',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = supervise(child);
  const url = (p: string) => `http://127.0.0.1:${port}${p}`;
  for (let i = 0; ; i++) {
    const up = await fetch(url('/')).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (proc.exited() || i > 200) throw new Error(`the runtime did not come up (${proc.exited() ?? 'timeout'}): ${proc.output()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    pid: child.pid!,
    port,
    controlPort,
    root,
    proc,
    order: (d, change = {}) => {
      const now = Date.now();
      return signSwapOrder(controlKey.privateKey, {
        pod,
        uid,
        digest: d,
        url: `${store.base}/${d}`,
        issuedAt: now,
        expiresAt: now + swapOrderTtlMs,
        ...change,
      });
    },
    send: async (body) => {
      const res = await fetch(`http://127.0.0.1:${controlPort}/swap`, { method: 'POST', body });
      return { status: res.status, body: (await res.json()) as { error?: string } };
    },
    get: async (p = '/') => {
      const res = await fetch(url(p));
      return { status: res.status, body: await res.text() };
    },
  };
}

/**
 * Clients requesting `path` of the machine `m()` names (it may be restarted meanwhile) until
 * stopped; an answer `wanted` refuses, or an error, is a failure.
 */
export function keepRequesting(
  m: () => Machine,
  path: string,
  wanted: (r: { status: number; body: string }) => boolean,
  clients: number,
): { stop(): Promise<{ answered: number; failures: string[] }> } {
  let running = true;
  let answered = 0;
  const failures: string[] = [];
  const all = Array.from({ length: clients }, async () => {
    while (running) {
      try {
        const r = await m().get(path);
        answered++;
        if (!wanted(r)) failures.push(`${r.status} ${r.body}`);
      } catch (err) {
        failures.push(String(err));
      }
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(all);
      return { answered, failures };
    },
  };
}
