// The bound on per-request handler processes: a slot per running process, a short ordered queue,
// 503 with Retry-After past it, and a waiting request that leaves when its client goes.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createHandlerTree, type HandlerTree } from '../../runtime/handlers.js';
import { ProcessSlots, slotsFromEnv } from '../../runtime/process-slots.js';

describe('ProcessSlots', () => {
  it('hands out slots up to its bound, queues in order up to its queue, refuses past that', async () => {
    const slots = new ProcessSlots(2, 2);
    const never = new AbortController().signal;
    const a = (await slots.acquire(never))!;
    const b = (await slots.acquire(never))!;
    assert.equal(slots.inUse, 2);
    const order: string[] = [];
    const c = slots.acquire(never).then((r) => (order.push('c'), r!));
    const d = slots.acquire(never).then((r) => (order.push('d'), r!));
    assert.equal(await slots.acquire(never), undefined, 'queue full: refused at once');
    a();
    a(); // a second release of the same slot changes nothing
    const releaseC = await c;
    assert.deepEqual(order, ['c']);
    assert.equal(slots.inUse, 2);
    b();
    const releaseD = await d;
    assert.deepEqual(order, ['c', 'd']);
    releaseC();
    releaseD();
    assert.equal(slots.inUse, 0);
  });

  it('takes a waiting request out of the queue when its client leaves', async () => {
    const slots = new ProcessSlots(1, 1);
    const release = (await slots.acquire(new AbortController().signal))!;
    const client = new AbortController();
    const waiting = slots.acquire(client.signal);
    client.abort();
    assert.equal(await waiting, undefined);
    // Its place is free again: the next one queues instead of being refused.
    const next = slots.acquire(new AbortController().signal);
    release();
    assert.ok(await next);
  });

  it('reads its bounds from the environment, with defaults', () => {
    assert.deepEqual([slotsFromEnv({}).max, slotsFromEnv({}).maxWaiting], [16, 64]);
    const s = slotsFromEnv({ SVC_HANDLER_MAX_PROCESSES: '3', SVC_HANDLER_MAX_WAITING: '5' });
    assert.deepEqual([s.max, s.maxWaiting], [3, 5]);
    assert.equal(slotsFromEnv({ SVC_HANDLER_MAX_PROCESSES: '-1' }).max, 16);
  });
});

describe('handler processes under a burst (real HTTP, real processes)', () => {
  let root: string;
  let tree: HandlerTree;
  let server: Server;
  let base: string;
  before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'svc-slots-'));
    mkdirSync(path.join(root, 'api'), { recursive: true });
    writeFileSync(path.join(root, 'api', 'work.sh'), 'sleep 0.4\nprintf "Content-Type: text/plain\\r\\n\\r\\ndone"\n');
    tree = createHandlerTree(root, { timeoutMs: 5000, processSlots: new ProcessSlots(1, 1) });
    server = createServer((req, res) => void tree(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await tree.ready;
  });
  after(async () => {
    server?.closeAllConnections();
    server?.close();
    await tree?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('runs one, queues one and refuses the third with 503 and Retry-After; the queued one still answers', async () => {
    const started = Date.now();
    const answers = await Promise.all(
      [0, 1, 2].map(() =>
        fetch(`${base}/api/work`).then(async (r) => ({
          status: r.status,
          retry: r.headers.get('retry-after'),
          body: await r.text(),
          ms: Date.now() - started,
        })),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 503);
    assert.equal(ok.length, 2, JSON.stringify(answers));
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.retry, '1');
    assert.ok(refused[0]!.ms < Math.min(...ok.map((a) => a.ms)), 'refused at once, before any process finished');
    assert.ok(ok.every((a) => a.body === 'done'));
    assert.ok(Math.max(...ok.map((a) => a.ms)) >= 750, 'the second ran after the first, not beside it');
    const after = await fetch(`${base}/api/work`);
    assert.equal(after.status, 200, 'slots are given back');
  });
});
