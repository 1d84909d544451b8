// The runtime's machine port (runtime/machine-port.ts), where the kubelet's readiness probe asks:
// held until the site is served, never refused while the runtime loads; and the compiled runtime
// opening it before its artifact has even arrived.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { packTree } from '../../lib/artifacts/tarball.js';
import { repoRoot } from '../../lib/paths.js';
import { listenMachinePort, type MachinePort } from '../../runtime/machine-port.js';
import { freePort } from '../support/ports.js';
import { scratchDir } from '../support/scratch.js';

const ask = (port: number, pathname: string, method = 'GET') =>
  fetch(`http://127.0.0.1:${port}${pathname}`, { method }).then(async (r) => ({ status: r.status, body: await r.text() }));

/** A machine port on a free loopback port, holding probes `holdMs`, given to `test` and closed after. */
async function withMachinePort(holdMs: number, test: (port: number, machine: MachinePort) => Promise<void>): Promise<void> {
  const port = await freePort();
  const machine = await listenMachinePort(port, '127.0.0.1', holdMs);
  try {
    await test(port, machine);
  } finally {
    machine.close();
  }
}

describe('the machine port', () => {
  it('holds /ready until the site is served, then answers it and every later one at once', async () => {
    await withMachinePort(5000, async (port, machine) => {
      const started = performance.now();
      const held = ask(port, '/ready');
      await new Promise((r) => setTimeout(r, 200));
      machine.serving();
      const answer = await held;
      const waited = performance.now() - started;
      assert.equal(answer.status, 200);
      assert.ok(waited >= 190 && waited < 2000, `held until served: ${waited} ms`);
      const head = await ask(port, '/ready', 'HEAD');
      assert.equal(head.status, 200);
    });
  });

  it('answers a held probe 503 once the hold is over: the kubelet asks again', async () => {
    await withMachinePort(150, async (port) => {
      const answer = await ask(port, '/ready');
      assert.equal(answer.status, 503);
      assert.match(answer.body, /not served yet/);
    });
  });

  it('answers /live at once, starting or serving, and holds no more than 64 probes', async () => {
    await withMachinePort(5000, async (port, machine) => {
      assert.equal((await ask(port, '/live')).status, 200, 'alive while it starts');
      const held = Array.from({ length: 64 }, () => ask(port, '/ready'));
      await new Promise((r) => setTimeout(r, 200));
      const started = performance.now();
      const beyond = await ask(port, '/ready');
      assert.equal(beyond.status, 503, 'the 65th is answered at once, not held');
      assert.ok(performance.now() - started < 1000);
      machine.serving();
      assert.deepEqual(
        (await Promise.all(held)).map((r) => r.status),
        Array.from({ length: 64 }, () => 200),
      );
      assert.equal((await ask(port, '/live')).status, 200);
    });
  });

  it('hands on nothing else until it takes orders, and then only to them', async () => {
    await withMachinePort(100, async (port, machine) => {
      const early = await ask(port, '/swap', 'POST');
      assert.equal(early.status, 503, 'an order before the machine serves is refused, not queued');
      assert.match(early.body, /not serving yet/);
      machine.takeOrders((req, res: ServerResponse) => res.writeHead(418).end(`${req.method} ${req.url}`));
      const taken = await ask(port, '/swap', 'POST');
      assert.deepEqual(taken, { status: 418, body: 'POST /swap' });
      // /ready stays the machine port's: the orders' listener cannot answer it for the site.
      assert.equal((await ask(port, '/ready')).status, 503);
    });
  });

  it('says a machine that takes no orders takes none, once it serves', async () => {
    await withMachinePort(100, async (port, machine) => {
      machine.serving();
      const r = await ask(port, '/swap', 'POST');
      assert.equal(r.status, 404);
      assert.match(r.body, /takes no orders/);
    });
  });
});

describe('the runtime process with a machine port', () => {
  it('opens it before the artifact arrives and answers the probe held there once the site is served', async () => {
    const artifact = await packTree({ 'index.html': 'fetched, then served' });
    const digest = `sha256:${createHash('sha256').update(artifact).digest('hex')}`;
    // The store answers only when told: the runtime is still fetching until then.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const store = createServer((_req, res) => void released.then(() => res.writeHead(200).end(artifact)));
    await new Promise<void>((r) => store.listen(0, '127.0.0.1', () => r()));
    const port = await freePort();
    let machinePort = await freePort();
    while (machinePort === port) machinePort = await freePort();
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/runtime/main.js'), 'serve'], {
      env: {
        PATH: process.env.PATH ?? '',
        SVC_SITE_ROOT: scratchDir('svc-machine-port-'),
        SVC_ARTIFACT_URL: `http://127.0.0.1:${(store.address() as AddressInfo).port}/a`,
        SVC_ARTIFACT_DIGEST: digest,
        SVC_CONTROL_PORT: String(machinePort),
        HOST: '127.0.0.1',
        PORT: String(port),
        SVC_LOG_LEVEL: 'silent',
        SVC_DRAIN_MS: '0',
      },
      stdio: 'ignore',
    });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      // The machine port is open (its /live answers) while the artifact is still on its way.
      let open = false;
      for (let i = 0; i < 200 && !open; i++) {
        open = await ask(machinePort, '/live').then(
          (r) => r.status === 200,
          () => false,
        );
        if (!open) await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(open, 'the machine port opened');
      const held = ask(machinePort, '/ready');
      const early = await Promise.race([held.then(() => 'answered'), new Promise((r) => setTimeout(() => r('held'), 300))]);
      assert.equal(early, 'held', 'the probe is held while the site is not served');
      await assert.rejects(fetch(`http://127.0.0.1:${port}/`), 'nothing is served before the artifact arrives');
      release();
      assert.equal((await held).status, 200);
      assert.equal(await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text()), 'fetched, then served', 'ready means served');
    } finally {
      child.kill('SIGTERM');
      await exited;
      store.close();
    }
  });
});
