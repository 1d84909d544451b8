// Content swapped in place on a running runtime (issue 36): the controller's signed order makes
// the machine fetch, verify and prepare another artifact aside and switch to it; kept revisions
// come back without a fetch; a refused artifact leaves what is served; a restarted container
// comes back on what it served; requests flowing through swaps never fail nor mix revisions.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ArtifactStore, startMachine, type Machine } from '../support/swapping-runtime.js';

describe('runtime content swap', () => {
  const store = new ArtifactStore();
  const page = (n: number) => ({ 'index.html': `<p>rev ${n}</p>`, 'about/index.html': `<p>about ${n}</p>` });
  const digests: string[] = [];
  let m: Machine;

  before(async () => {
    await store.start();
    for (let i = 0; i < 5; i++) digests.push(await store.publish(page(i)));
    m = await startMachine(store, digests[0]!);
  });
  after(async () => {
    await m?.proc.stop();
    store.close();
  });

  it('serves a new artifact once the order says so, and marks it for the startup probe and a restart', async () => {
    assert.equal((await m.get()).body, '<p>rev 0</p>');
    const swapped = await m.send(m.order(digests[1]!));
    assert.equal(swapped.status, 200, JSON.stringify(swapped.body));
    assert.equal(swapped.body.how, 'fetched');
    assert.equal((await m.get()).body, '<p>rev 1</p>');
    assert.equal((await m.get('/about/')).body, '<p>about 1</p>');
    assert.equal(readFileSync(path.join(m.root, '.svc-artifact'), 'utf8').trim(), digests[1]);
    assert.equal(readFileSync(path.join(m.root, '.svc-current'), 'utf8').trim(), digests[1]);
    const again = await m.send(m.order(digests[1]!));
    assert.equal(again.body.how, 'serving', 'an order for what it serves changes nothing');
  });

  it('switches back to a revision it keeps without a fetch, and keeps the last three', async () => {
    const before = store.hits.length;
    const back = await m.send(m.order(digests[0]!));
    assert.equal(back.status, 200);
    assert.equal(back.body.how, 'restored', 'built again from its kept, verified archive');
    assert.equal(store.hits.length, before, 'no request to the store');
    assert.equal((await m.get()).body, '<p>rev 0</p>');
    for (const d of [digests[2]!, digests[3]!]) assert.equal((await m.send(m.order(d))).status, 200);
    const kept = readdirSync(path.join(m.root, 'revs')).sort();
    assert.deepEqual(kept, [digests[0]!, digests[2]!, digests[3]!].map((d) => d.slice(7)).sort());
  });

  it('keeps serving what it served when the artifact cannot be fetched or verified, and says why (422)', async () => {
    const missing = `sha256:${'e'.repeat(64)}`;
    const refused = await m.send(m.order(missing));
    assert.equal(refused.status, 422);
    assert.match(refused.body.error ?? '', /404/);
    const forged = await store.publish({ 'index.html': 'not what was deployed' });
    store.artifacts.set(`sha256:${'f'.repeat(64)}`, store.artifacts.get(forged)!);
    const mismatch = await m.send(m.order(`sha256:${'f'.repeat(64)}`));
    assert.equal(mismatch.status, 422);
    assert.match(mismatch.body.error ?? '', /digest mismatch/);
    assert.equal((await m.get()).body, '<p>rev 3</p>', 'the served revision is untouched');
  });

  it('a restarted container comes back on the revision it served, its tree rebuilt from the kept archive', async () => {
    // Handler code (same uid) could change the served tree: a restart never serves that.
    writeFileSync(path.join(m.root, 'revs', digests[3]!.slice(7), 'index.html'), 'defaced');
    await m.proc.stop();
    const hits = store.hits.length;
    m = await startMachine(store, digests[0]!, { root: m.root });
    assert.equal((await m.get()).body, '<p>rev 3</p>');
    assert.equal(store.hits.length, hits, 'no fetch');
    assert.ok(existsSync(path.join(m.root, 'revs', digests[3]!.slice(7), '.svc-archive')));
  });

  it('a handler tree comes back on the artifact its spec names, whatever pointer and archive its code planted', async () => {
    // Handler code runs as the runtime's uid and can write the site root: a pointer to an archive
    // it made, hashing to the digest it names, is not taken back after a restart.
    const { packTree } = await import('../../lib/artifacts/tarball.js');
    const { createHash } = await import('node:crypto');
    const { mkdirSync } = await import('node:fs');
    const named = await store.publish({ 'index.html': '<p>named</p>', 'api/x.js': 'export default () => "x"' });
    const h = await startMachine(store, named, { kind: 'handlers' });
    try {
      const planted = await packTree({ 'index.html': 'planted' });
      const digest = `sha256:${createHash('sha256').update(planted).digest('hex')}`;
      mkdirSync(path.join(h.root, 'revs', digest.slice(7)), { recursive: true });
      writeFileSync(path.join(h.root, 'revs', digest.slice(7), '.svc-archive'), planted);
      writeFileSync(path.join(h.root, '.svc-current'), digest);
      await h.proc.stop();
      const again = await startMachine(store, named, { root: h.root, kind: 'handlers' });
      h.proc = again.proc;
      assert.equal((await again.get()).body, '<p>named</p>');
      const control = await fetch(`http://127.0.0.1:${again.controlPort}/swap`, { method: 'POST', body: 'x' }).then(
        () => 'listening',
        () => 'closed',
      );
      assert.equal(control, 'closed', 'a handler tree takes no orders');
    } finally {
      await h.proc.stop();
    }
  });

  it('answers every request through 40 swaps under load, each wholly from one revision', async () => {
    const bodies = new Set(digests.slice(0, 4).map((_, i) => `<p>rev ${i}</p>`));
    let stop = false;
    const failures: string[] = [];
    let answered = 0;
    const client = async () => {
      while (!stop) {
        try {
          const r = await m.get();
          answered++;
          if (r.status !== 200 || !bodies.has(r.body)) failures.push(`${r.status} ${r.body}`);
        } catch (err) {
          failures.push(String(err));
        }
      }
    };
    const clients = Array.from({ length: 8 }, client);
    const started = Date.now();
    const times: number[] = [];
    for (let i = 0; i < 40; i++) {
      const t = Date.now();
      const r = await m.send(m.order(digests[i % 4]!));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      times.push(Date.now() - t);
      assert.equal((await m.get()).body, `<p>rev ${i % 4}</p>`, 'served the moment the order is answered');
    }
    stop = true;
    await Promise.all(clients);
    times.sort((a, b) => a - b);
    console.log(`# 40 swaps in ${Date.now() - started} ms under ${answered} requests: swap p50 ${times[20]} ms, max ${times[39]} ms`);
    assert.deepEqual(failures, []);
    assert.ok(answered > 100, `requests flowed (${answered})`);
  });
});
