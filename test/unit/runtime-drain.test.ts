// The runtime process on SIGTERM: it keeps serving for SVC_DRAIN_MS (while endpoints stop routing
// to it), then stops accepting, finishes the request in flight and exits 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';
import { scratchDir } from '../support/scratch.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  return port;
}

describe('runtime drain', () => {
  it('serves through the drain window after SIGTERM, finishes in-flight requests, exits 0', async () => {
    const root = scratchDir('svc-drain-');
    writeFileSync(path.join(root, 'index.html'), 'still here');
    const big = 32 * 1024 * 1024;
    writeFileSync(path.join(root, 'big.bin'), Buffer.alloc(big, 1));
    const port = await freePort();
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/runtime/main.js')], {
      env: { ...process.env, SVC_SITE_ROOT: root, HOST: '127.0.0.1', PORT: String(port), SVC_DRAIN_MS: '500', SVC_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let logs = '';
    child.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    const exited = new Promise<{ code: number | null; at: number }>((r) => child.once('exit', (code) => r({ code, at: Date.now() })));
    const url = `http://127.0.0.1:${port}/`;
    try {
      let ready = false;
      for (let i = 0; i < 100 && !ready; i++) {
        ready = await fetch(url).then(
          (r) => r.ok,
          () => false,
        );
        if (!ready) await sleep(50);
      }
      assert.ok(ready, 'the runtime came up');

      // A response still being sent when the listener closes: the client reads nothing yet, so
      // the server's writes stall on a full socket.
      const socket = connect(port, '127.0.0.1');
      await new Promise<void>((r) => socket.once('connect', () => r()));
      socket.write('GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n');
      socket.pause();
      let received = 0;
      socket.on('data', (c: Buffer) => (received += c.length));
      const replied = new Promise<void>((r) => socket.once('close', () => r()));

      const termAt = Date.now();
      child.kill('SIGTERM');
      await sleep(150);
      const during = await fetch(url);
      assert.equal(during.status, 200, 'served within the drain window');
      assert.equal(await during.text(), 'still here');
      assert.equal(during.headers.get('connection'), 'close', 'asks clients to reconnect elsewhere');

      await sleep(600);
      await assert.rejects(fetch(url), 'no new connections after the drain window');
      assert.equal(child.exitCode, null, 'still finishing the response in flight');
      socket.resume();
      await replied;
      assert.ok(received > big, `the whole file arrived (${received} bytes)`);

      const { code, at } = await exited;
      assert.equal(code, 0);
      assert.ok(at - termAt >= 500, `exited after the drain window (${at - termAt} ms)`);
      assert.match(logs, /Draining before shutdown/);
      assert.match(logs, /Stopped/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
