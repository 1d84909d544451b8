// Attack surface: a runtime machine's control port (issue 36), which takes the orders that make it
// serve another artifact. It is reachable from the platform and from the app's own machines, and
// the runtime runs next to tenant code (a handler tree's modules, a sibling machine's): every order
// is refused that the controllers did not sign for this very Pod, now, and newer than the last,
// before anything is fetched. What a machine holds (its environment) cannot make an order. A
// container that restarts comes back only on a revision a genuine order for this Pod named, never
// on one the app's code planted in the emptyDir it can write. The port is the runtime's whenever
// the app's code runs (opened first, the app's code loaded only once the machine serves): a
// handler tree cannot take it and read the orders (and their artifact credentials) meant for it.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { controlKeys, signSwapOrder, swapOrderTtlMs } from '../../lib/machine-control.js';
import { freePort } from '../support/ports.js';
import { ArtifactStore, controlKey, machinePod, startMachine, type Machine } from '../support/swapping-runtime.js';

describe('machine control port', () => {
  const store = new ArtifactStore();
  let m: Machine;
  let served: string;
  let other: string;

  before(async () => {
    await store.start();
    served = await store.publish({ 'index.html': 'served' });
    other = await store.publish({ 'index.html': 'other' });
    m = await startMachine(store, served);
  });
  after(async () => {
    await m?.proc.stop();
    store.close();
  });

  /** Sends `body`, expects it refused with `status` and a message like `why`, and nothing fetched nor changed. */
  async function refused(body: string, status: number, why: RegExp): Promise<void> {
    const hits = store.hits.length;
    const r = await m.send(body);
    assert.equal(r.status, status, JSON.stringify(r.body));
    assert.match(r.body.error ?? '', why);
    assert.equal(store.hits.length, hits, 'nothing fetched for a refused order');
    assert.equal((await m.get()).body, 'served');
  }

  it('refuses what is not a signed order', async () => {
    await refused('', 403, /base64url/);
    await refused('{"digest":"x"}', 403, /base64url/);
    await refused(`${Buffer.from('{}').toString('base64url')}.${'A'.repeat(86)}`, 403, /not signed by the platform/);
  });

  it('refuses an order signed with any key but the controllers’ (a tenant’s own, one derived from another key)', async () => {
    const now = Date.now();
    const order = {
      pod: machinePod.name,
      uid: machinePod.uid,
      digest: other,
      url: `${store.base}/${other}`,
      issuedAt: now,
      expiresAt: now + 30_000,
    };
    const tenant = generateKeyPairSync('ed25519').privateKey;
    await refused(signSwapOrder(tenant, order), 403, /not signed by the platform/);
    await refused(signSwapOrder(controlKeys(Buffer.alloc(32, 9)).privateKey, order), 403, /not signed by the platform/);
    assert.notEqual(controlKeys(Buffer.alloc(32, 9)).publicKey, controlKey.publicKey);
  });

  it('refuses a signed order changed in transit (another digest, another URL)', async () => {
    const [body, sig] = m.order(served).split('.');
    const changed = JSON.parse(Buffer.from(body!, 'base64url').toString()) as Record<string, unknown>;
    for (const change of [{ digest: other }, { url: 'http://attacker.example/x' }]) {
      const forged = Buffer.from(JSON.stringify({ ...changed, ...change })).toString('base64url');
      await refused(`${forged}.${sig}`, 403, /not signed by the platform/);
    }
  });

  it('refuses an order for another machine (replayed from a sibling), an expired one, and one older than the last it took', async () => {
    await refused(m.order(other, { pod: 'site-m1-abc' }), 403, /for site-m1-abc .*, not this machine/);
    // A Pod of the same name made again (the name does not change with content) is another Pod.
    await refused(m.order(other, { uid: '00000000-0000-4000-8000-000000000000' }), 403, /not this machine/);
    await refused(m.order(other, { issuedAt: Date.now() - 2 * swapOrderTtlMs, expiresAt: Date.now() - swapOrderTtlMs }), 403, /expired/);
    // An old order kept by whoever saw it go by: once a newer one is taken, it takes nothing back.
    const old = m.order(served, { issuedAt: Date.now() - 1000 });
    const r = await m.send(m.order(other));
    assert.equal(r.status, 200);
    assert.equal((await m.get()).body, 'other');
    const hits = store.hits.length;
    const replay = await m.send(old);
    assert.equal(replay.status, 403);
    assert.match(replay.body.error ?? '', /newer order was taken/);
    assert.equal(store.hits.length, hits);
    assert.equal((await m.get()).body, 'other', 'still what the newest order said');
    // And after its container restarts (the same Pod, the emptyDir kept): still refused.
    await m.proc.stop();
    m = await startMachine(store, served, { root: m.root });
    assert.equal((await m.get()).body, 'other', 'back on what it served');
    const afterRestart = await m.send(old);
    assert.equal(afterRestart.status, 403);
    assert.match(afterRestart.body.error ?? '', /newer order was taken/);
    // Back to what it served before, for the other tests.
    assert.equal((await m.send(m.order(served))).status, 200);
  });

  it('is the runtime’s whenever the app’s code runs: a handler tree cannot take it to read the orders', async () => {
    const port = await freePort();
    // Handler code that, as it loads, tries to listen where the orders come (on every address and on loopback).
    const squatter = `
      import net from 'node:net';
      const take = (host) => new Promise((resolve) => {
        const s = net.createServer((c) => c.end('HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\n{}'));
        s.once('error', (e) => resolve(e.code));
        s.listen(${port}, host, () => resolve('bound'));
      });
      const took = [await take('0.0.0.0'), await take('127.0.0.1')];
      export default () => ({ took });`;
    const first = await store.publish({ 'index.html': 'squatting', 'api/took.js': squatter });
    const next = await store.publish({ 'index.html': 'swapped past the squatter', 'api/took.js': squatter });
    const h = await startMachine(store, first, { kind: 'handlers', controlPort: port });
    try {
      const took = JSON.parse((await h.get('/api/took')).body) as { took: string[] };
      assert.deepEqual(took.took, ['EADDRINUSE', 'EADDRINUSE']);
      const r = await h.send(h.order(next));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((await h.get()).body, 'swapped past the squatter', 'the order reached the runtime, not the app');
    } finally {
      await h.proc.stop();
    }
  });

  it('refuses a body past the order size and anything but POST /swap', async () => {
    const r = await m.send('A'.repeat(64 * 1024)).catch(() => ({ status: 413, body: { error: 'reset' } }));
    assert.equal(r.status, 413);
    const other = await fetch(`http://127.0.0.1:${m.controlPort}/`);
    assert.equal(other.status, 404);
    assert.equal((await m.get()).body, 'served');
  });

  it("comes back after a restart on no revision the app's code planted: only one a genuine order for this Pod named", async () => {
    // Handler code runs as the runtime's uid and can write the emptyDir: it plants an archive of
    // its own (hashing to the digest it names, so it verifies) and an order naming it, signed by
    // the wrong key, or by the right one for another Pod (a sibling's, replayed), or not at all.
    const { packTree } = await import('../../lib/artifacts/tarball.js');
    const { createHash } = await import('node:crypto');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const path = await import('node:path');
    const planted = await packTree({ 'index.html': 'planted' });
    const digest = `sha256:${createHash('sha256').update(planted).digest('hex')}`;
    const now = Date.now();
    const body = {
      pod: machinePod.name,
      uid: machinePod.uid,
      digest,
      url: `${store.base}/${digest}`,
      issuedAt: now,
      expiresAt: now + 1000,
    };
    const tenantKey = generateKeyPairSync('ed25519').privateKey;
    const plants = [
      signSwapOrder(tenantKey, body),
      signSwapOrder(controlKey.privateKey, { ...body, uid: '00000000-0000-4000-8000-000000000000' }),
      `${Buffer.from(JSON.stringify(body)).toString('base64url')}.${'A'.repeat(86)}`,
    ];
    for (const order of plants) {
      mkdirSync(path.join(m.root, 'revs', digest.slice(7)), { recursive: true });
      writeFileSync(path.join(m.root, 'revs', digest.slice(7), '.svc-archive'), planted);
      writeFileSync(path.join(m.root, '.svc-served-order'), order);
      await m.proc.stop();
      m = await startMachine(store, served, { root: m.root });
      assert.equal((await m.get()).body, 'served', 'the revision of the spec, not the planted one');
    }
  });

  it("takes orders after a restart whatever time the app's code wrote as the last order taken", async () => {
    // A number far in the future would have every later order refused as older (the machine
    // pinned to its revision): only a signed order for this Pod says when the last was taken.
    const { writeFileSync } = await import('node:fs');
    const path = await import('node:path');
    writeFileSync(path.join(m.root, '.svc-last-order'), '9000000000000000');
    await m.proc.stop();
    m = await startMachine(store, served, { root: m.root });
    const r = await m.send(m.order(other));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((await m.get()).body, 'other');
  });
});
