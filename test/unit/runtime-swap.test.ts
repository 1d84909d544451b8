// Content swapped in place on a running runtime (issue 36): the controller's signed order makes
// the machine fetch, verify and prepare another artifact aside and switch to it; kept revisions
// come back without a fetch; a refused artifact leaves what is served; a restarted container
// comes back on what it served; requests flowing through swaps never fail nor mix revisions.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ArtifactStore, keepRequesting, startMachine, type Machine } from '../support/swapping-runtime.js';

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
    assert.ok(existsSync(path.join(m.root, '.svc-served-order')), 'the order served is kept for a restart');
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

  it('answers every request through 40 swaps under load, each wholly from one revision', async () => {
    const bodies = new Set(digests.slice(0, 4).map((_, i) => `<p>rev ${i}</p>`));
    const load = keepRequesting(
      () => m,
      '/',
      (r) => r.status === 200 && bodies.has(r.body),
      8,
    );
    const started = Date.now();
    const times: number[] = [];
    for (let i = 0; i < 40; i++) {
      const t = Date.now();
      const r = await m.send(m.order(digests[i % 4]!));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      times.push(Date.now() - t);
      assert.equal((await m.get()).body, `<p>rev ${i % 4}</p>`, 'served the moment the order is answered');
    }
    const { answered, failures } = await load.stop();
    times.sort((a, b) => a - b);
    console.log(`# 40 swaps in ${Date.now() - started} ms under ${answered} requests: swap p50 ${times[20]} ms, max ${times[39]} ms`);
    assert.deepEqual(failures, []);
    assert.ok(answered > 100, `requests flowed (${answered})`);
  });
});

describe('handler tree content swap: a process per revision', () => {
  const store = new ArtifactStore();
  // A module with state of its own (a counter, a timer), and what the process it runs in was given.
  const tree = (n: number, extra: Record<string, string> = {}) => ({
    'index.html': `<p>tree ${n}</p>`,
    'api/rev.js': `
      let hits = 0;
      globalThis.svcRevisions = [...(globalThis.svcRevisions ?? []), ${n}];
      setInterval(() => {}, 1000);
      export default () => ({ rev: ${n}, hits: ++hits, pid: process.pid, seen: globalThis.svcRevisions,
        env: Object.keys(process.env).filter((k) => /^SVC_(ARTIFACT|CONTROL|POD)_/.test(k)) });`,
    ...extra,
  });
  const digests: string[] = [];
  let m: Machine;
  const rev = async () =>
    JSON.parse((await m.get('/api/rev')).body) as { rev: number; hits: number; pid: number; seen: number[]; env: string[] };
  /** Whether `pid` runs (a zombie, ended and not yet reaped by whichever process adopted it, does not). */
  const alive = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
    } catch {
      return false;
    }
  };

  before(async () => {
    await store.start();
    for (let i = 0; i < 3; i++) digests.push(await store.publish(tree(i)));
    m = await startMachine(store, digests[0]!, { kind: 'handlers', env: { SVC_ARTIFACT_TOKEN: 'artifact-credential' } });
  });
  after(async () => {
    await m?.proc.stop();
    store.close();
  });

  it("runs the app's modules in a process of the revision's own, given none of the platform's credentials", async () => {
    const first = await rev();
    assert.equal(first.rev, 0);
    assert.notEqual(first.pid, m.pid, 'not the runtime process, which holds the control port');
    assert.deepEqual(first.env, [], 'no artifact credential nor address, no control port settings');
  });

  it('switches to a fresh process on an order: no module state, global or timer of the old revision survives it', async () => {
    const old = await rev();
    const swapped = await m.send(m.order(digests[1]!));
    assert.equal(swapped.status, 200, JSON.stringify(swapped.body));
    const now = await rev();
    assert.equal(now.rev, 1, 'served the moment the order is answered');
    assert.equal(now.hits, 1, "the new revision's module starts afresh");
    assert.deepEqual(now.seen, [1], "no global of the old revision's module graph");
    assert.notEqual(now.pid, old.pid);
    for (let i = 0; i < 100 && alive(old.pid); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(alive(old.pid), false, "the old revision's process (and its timer) ended once it had no requests");
    // Back to a kept revision: a new process again, from the archive kept on the machine.
    const hits = store.hits.length;
    const back = await m.send(m.order(digests[0]!));
    assert.equal(back.body.how, 'restored');
    assert.equal(store.hits.length, hits, 'no fetch');
    assert.deepEqual(await rev().then((r) => [r.rev, r.hits]), [0, 1]);
  });

  it('a request in flight on the old revision finishes there; the next goes to the new one', async () => {
    const slow = await store.publish(
      tree(3, {
        'api/slow.js': 'export default async () => { await new Promise((r) => setTimeout(r, 400)); return "slow " + process.pid; }',
      }),
    );
    assert.equal((await m.send(m.order(slow))).status, 200);
    const oldPid = (await rev()).pid;
    const inFlight = m.get('/api/slow');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((await m.send(m.order(digests[2]!))).status, 200);
    assert.equal((await rev()).rev, 2);
    const answer = await inFlight;
    assert.deepEqual([answer.status, answer.body], [200, `slow ${oldPid}`], 'the retired revision finished what it had');
  });

  it('keeps serving the revision it serves when a new one cannot start, and says why (422)', async () => {
    // A tree whose runnable copy cannot be made: a TypeScript module whose compiled name is a directory.
    const broken = await store.publish({ 'index.html': 'x', 'api/a.ts': 'export default 1', 'api/a.js/readme.txt': 'x' });
    const served = (await rev()).rev;
    const refused = await m.send(m.order(broken));
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match(refused.body.error ?? '', /EISDIR|directory/);
    assert.equal((await rev()).rev, served, 'the revision served before serves again (made afresh from its archive)');
  });

  it('ends every process the old revision left before the next is prepared: detached children, other sessions', async () => {
    // A module's detached child (a session of its own), and a process a shell it started put in a
    // session of its own. (A process whose parent has gone is adopted by process 1: in a machine's
    // container that is the runtime, which ends it too; test/integration/content-swaps.test.ts.)
    const leaves = await store.publish(
      tree(7, {
        'api/spawn.js': [
          "import { spawn } from 'node:child_process';",
          'export default async () => {',
          "  const c = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });",
          '  c.unref();',
          "  const sh = spawn('sh', ['-c', 'setsid sleep 301 & echo $!; exec sleep 302'], { stdio: ['ignore', 'pipe', 'ignore'] });",
          "  const other = await new Promise((r) => sh.stdout.once('data', (d) => r(Number(String(d).trim()))));",
          '  return { pids: [c.pid, sh.pid, other] };',
          '};',
        ].join('\n'),
      }),
    );
    assert.equal((await m.send(m.order(leaves))).status, 200);
    const { pids } = JSON.parse((await m.get('/api/spawn')).body) as { pids: number[] };
    assert.equal(pids.length, 3);
    for (let i = 0; i < 20 && !pids.every(alive); i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(pids.every(alive), `all left running (${pids.join(', ')})`);
    assert.equal((await m.send(m.order(digests[0]!))).status, 200);
    assert.deepEqual(pids.filter(alive), [], 'none of them runs once the next revision serves');
  });

  it('passes a chunked body on framed: a request hidden in it never reaches the handlers as a request', async () => {
    const echo = await store.publish(
      tree(8, {
        'api/echo.js':
          "export default async (req) => ({ method: req.method, body: await req.text(), who: req.headers.get('x-svc-auth-subject') });\n",
      }),
    );
    assert.equal((await m.send(m.order(echo))).status, 200);
    const { connect } = await import('node:net');
    const inner = 'GET /api/echo HTTP/1.1\r\nHost: x\r\nX-Svc-Auth-Subject: admin@victim\r\n\r\n';
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = connect(m.port, '127.0.0.1');
      let got = '';
      sock.on('data', (d: Buffer) => (got += d.toString()));
      sock.on('error', reject);
      sock.on('close', () => resolve(got));
      sock.write(
        `DELETE /api/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n`,
      );
    });
    const answer = JSON.parse(
      raw
        .slice(raw.indexOf('\r\n\r\n') + 4)
        .replace(/^[0-9a-f]+\r\n/, '')
        .split('\r\n')[0]!,
    ) as {
      method: string;
      body: string;
      who: string | null;
    };
    assert.deepEqual([answer.method, answer.body, answer.who], ['DELETE', inner, null], 'the body arrives as the body');
    // The next request on the runtime's connection to the child gets its own answer, not a smuggled one.
    for (let i = 0; i < 5; i++) assert.equal((await rev()).rev, 8);
  });

  it('answers every request through 20 handler swaps under load, each wholly from one revision', async () => {
    const revs = [0, 1, 2, 8];
    const load = keepRequesting(
      () => m,
      '/api/rev',
      (r) => r.status === 200 && revs.includes((JSON.parse(r.body) as { rev: number }).rev),
      6,
    );
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = Date.now();
      const r = await m.send(m.order(digests[i % 3]!));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      times.push(Date.now() - t);
      assert.equal((await rev()).rev, i % 3);
    }
    const { answered, failures } = await load.stop();
    times.sort((a, b) => a - b);
    console.log(`# 20 handler swaps under ${answered} requests: swap p50 ${times[10]} ms, max ${times[19]} ms`);
    assert.deepEqual(failures, []);
    assert.ok(answered > 50, `requests flowed (${answered})`);
  });

  it('comes back on the revision it served after a restart, in a new process, its tree rebuilt from the kept archive', async () => {
    assert.equal((await m.send(m.order(digests[1]!))).status, 200);
    await m.proc.stop();
    const hits = store.hits.length;
    m = await startMachine(store, digests[0]!, { root: m.root, kind: 'handlers' });
    assert.deepEqual(await rev().then((r) => [r.rev, r.hits]), [1, 1]);
    assert.equal(store.hits.length, hits, 'no fetch');
    assert.equal((await m.send(m.order(digests[2]!))).status, 200, 'and takes orders again');
    assert.equal((await rev()).rev, 2);
  });

  it("stops the machine when the served revision's process ends, so the container restarts", async () => {
    const exits = await store.publish(
      tree(9, { 'api/exit.js': 'export default () => { setTimeout(() => process.exit(3), 10); return "bye"; }' }),
    );
    assert.equal((await m.send(m.order(exits))).status, 200);
    assert.equal((await m.get('/api/exit')).body, 'bye');
    for (let i = 0; i < 100 && !m.proc.exited(); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(m.proc.exited(), 'exited with code 1');
    assert.match(m.proc.output(), /handler process of the served revision exited with code 3/);
  });
});
