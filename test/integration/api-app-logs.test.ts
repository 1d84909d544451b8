// GET /apps/{appID}/logs against the test cluster: machines print a numbered line with their clock
// every 200 ms (and serve HTTP so they become Ready); the API reads their logs through the
// apiserver from node-agent's kubelet endpoint.
import assert from 'node:assert/strict';
import { readFile, readdir, readlink } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { mergePatch } from '../../lib/kube/client.js';
import { group, version } from '../../lib/resources/index.js';
import { attenuate } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { kubeConfig } from '../support/kube.js';
import { eventually } from '../support/wait.js';
import { images } from '../support/images.js';

const talkerCommand = [
  'sh',
  '-c',
  'python3 -m http.server "$PORT" --bind 0.0.0.0 >/dev/null 2>&1 & i=0; while :; do i=$((i+1)); echo "tick $i $(date +%s%3N)"; sleep 0.2; done',
];
const textLine = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z) m(\d+) tick (\d+) (\d+)$/;

interface Tick {
  time: number;
  machine: number;
  n: number;
  /** When the machine printed it (its clock, ms). */
  printed: number;
}

function parseTick(line: string): Tick {
  const m = textLine.exec(line);
  assert.ok(m, `a machine-prefixed line: ${JSON.stringify(line)}`);
  return { time: Date.parse(m[1]!), machine: Number(m[2]), n: Number(m[3]), printed: Number(m[4]) };
}

const linesOf = (text: string) => text.split('\n').filter((l) => l !== '');

/** Reads a streamed response line by line as it arrives. */
class StreamReader {
  readonly lines: string[] = [];
  ended = false;
  bytes = 0;
  constructor(res: Response) {
    void this.pump(res.body!.getReader());
  }
  private async pump(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.bytes += value.length;
        buf += decoder.decode(value, { stream: true });
        for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
          this.lines.push(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      }
    } catch {
      // aborted
    }
    this.ended = true;
  }
  waitFor(what: string, pred: (line: string) => boolean, timeoutMs = 30_000): Promise<string> {
    return eventually(what, () => this.lines.find(pred), { timeoutMs, intervalMs: 50 });
  }
}

/** This process's established TCP connections to the apiserver, as socket inodes. */
async function apiserverSockets(port: number): Promise<Set<string>> {
  const mine = new Set<string>();
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) mine.add(m[1]!);
  }
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  const out = new Set<string>();
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const row of text.split('\n').slice(1)) {
      const f = row.trim().split(/\s+/);
      // local_address rem_address st ... inode (10th column)
      if (f.length > 9 && f[2]!.endsWith(`:${portHex}`) && f[3] === '01' && mine.has(f[9]!)) out.add(f[9]!);
    }
  }
  return out;
}

describe('API app logs', () => {
  let api: TestApi;
  let custom: k8s.CustomObjectsApi;
  let apiserverPort: number;
  let ns: string;

  const get = (path: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(api.url + path, { headers: { authorization: `Bearer ${api.token}`, ...headers }, ...(signal ? { signal } : {}) });

  const setMachines = async (name: string, machines: number) => {
    // A merge patch: a get-then-replace races the controllers' own writes to the App (409).
    await custom.patchNamespacedCustomObject(
      { group, version, namespace: ns, plural: 'apps', name, body: { spec: { machines } } },
      mergePatch,
    );
  };

  /** Lines of the not-followed log, once every one of `machines` has printed `atLeast` lines. */
  const recent = async (query: string, machines: number[], atLeast = 1): Promise<Tick[]> =>
    eventually(
      `lines of machines ${machines.join(',')}`,
      async () => {
        const res = await get(`/api/apps/talker/logs${query}`);
        const text = await res.text();
        assert.equal(res.status, 200, text);
        const ticks = linesOf(text).map(parseTick);
        return machines.every((m) => ticks.filter((t) => t.machine === m).length >= atLeast) ? ticks : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );

  before(async () => {
    api = await startTestApi();
    ns = api.account.namespace;
    const kc = kubeConfig();
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    apiserverPort = Number(new URL(kc.getCurrentCluster()!.server).port || 443);
    await api.deps.apps.create(ns, 'talker', { kind: 'container', image: images.python, command: talkerCommand, machines: 2 });
    // Counts the API's looks for an app's machines (a followed log looks again every relistMs).
    const machines = api.deps.machines;
    const list = machines.list.bind(machines);
    machines.list = (namespace: string, app: string) => {
      looks.set(app, (looks.get(app) ?? 0) + 1);
      return list(namespace, app);
    };
  });
  const looks = new Map<string, number>();
  const listsOf = (app: string) => looks.get(app) ?? 0;
  after(async () => {
    await api?.close();
  });

  it('answers recent lines of every machine, prefixed with the machine and merged in time order', async () => {
    const ticks = await recent('', [0, 1], 5);
    const res = await get('/api/apps/talker/logs');
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    await res.text();
    for (let i = 1; i < ticks.length; i++) assert.ok(ticks[i]!.time >= ticks[i - 1]!.time, 'in time order');
    // Merged, not one machine after the other: the machine changes along the list more than once.
    const switches = ticks.filter((t, i) => i > 0 && t.machine !== ticks[i - 1]!.machine).length;
    assert.ok(switches > 1, `interleaved machines (${switches} switches)`);
    // The kubelet's timestamp is when the line was written.
    for (const t of ticks) assert.ok(Math.abs(t.time - t.printed) < 2_000, `timestamp ${t.time} near print time ${t.printed}`);

    // tail: the last N lines of each machine.
    const wide = await recent('?tail=100', [0, 1]);
    const tail3 = await recent('?tail=3', [0, 1]);
    for (const m of [0, 1]) {
      const mine = tail3.filter((t) => t.machine === m).map((t) => t.n);
      assert.equal(mine.length, 3, `machine ${m}: 3 lines`);
      assert.deepEqual(mine, [mine[0]!, mine[0]! + 1, mine[0]! + 2], 'consecutive lines');
      const lastBefore = Math.max(...wide.filter((t) => t.machine === m).map((t) => t.n));
      assert.ok(mine[0]! >= lastBefore - 2, 'the latest lines');
    }
    assert.equal(await (await get('/api/apps/talker/logs?tail=0')).text(), '');

    // since: a duration back from now, or an RFC3339 time.
    const start = Date.now();
    const sinceTicks = await recent('?since=2s', [0, 1]);
    for (const t of sinceTicks) assert.ok(t.time >= start - 2_000 - 50, `line at ${t.time} is within the last 2 s`);
    assert.ok(sinceTicks.length < 2 * 15, 'about 10 lines per machine in 2 s');
    const cut = new Date(Date.now() - 1_000).toISOString();
    for (const t of await recent(`?since=${cut}`, [0, 1])) assert.ok(t.time >= Date.parse(cut));
  });

  it('answers NDJSON when asked', async () => {
    const res = await get('/api/apps/talker/logs?tail=2', { accept: 'application/x-ndjson' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    const objects = linesOf(await res.text()).map((l) => JSON.parse(l) as { time: string; machine: number; pod: string; line: string });
    assert.equal(objects.length, 4);
    for (const o of objects) {
      assert.deepEqual(Object.keys(o).sort(), ['line', 'machine', 'pod', 'time']);
      assert.match(o.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.ok(o.machine === 0 || o.machine === 1);
      assert.match(o.pod, new RegExp(`^talker-m${o.machine}-`));
      assert.match(o.line, /^tick \d+ \d+$/);
    }
  });

  it('follows: recent lines, then lines written after the request, new machines, and no upstream left after the client goes', async () => {
    await recent('', [0, 1]);
    const baseline = await apiserverSockets(apiserverPort);
    const abort = new AbortController();
    const started = Date.now();
    const res = await get('/api/apps/talker/logs?follow=true&tail=1', {}, abort.signal);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    const reader = new StreamReader(res);
    // The recent line of each machine first.
    for (const m of [0, 1]) {
      const first = parseTick(await reader.waitFor(`machine ${m}'s recent line`, (l) => parseTick(l).machine === m));
      assert.ok(first.printed < started + 1_000, `machine ${m}: the first line is its recent one`);
    }
    // Then lines printed after the request began, by each machine: their printed clock and their
    // kubelet timestamp are both later than the request.
    for (const m of [0, 1]) {
      const fresh = parseTick(
        await reader.waitFor(`a line machine ${m} printed after the request`, (l) => {
          const t = parseTick(l);
          return t.machine === m && t.printed > started + 500;
        }),
      );
      assert.ok(fresh.time > started, 'stamped after the request began');
    }
    // tail=1: one line from before the request per machine; then every line, in order, never repeated.
    for (const m of [0, 1]) {
      const mine = reader.lines.map(parseTick).filter((t) => t.machine === m);
      assert.ok(mine.filter((t) => t.printed < started - 300).length <= 1, `machine ${m}: one old line`);
      for (let i = 1; i < mine.length; i++) assert.equal(mine[i]!.n, mine[i - 1]!.n + 1, `machine ${m}: consecutive lines`);
    }
    // A machine that appears while following is picked up.
    await setMachines('talker', 3);
    const third = parseTick(await reader.waitFor('a line of the new machine 2', (l) => parseTick(l).machine === 2, 60_000));
    assert.ok(third.time > started);

    const during = await apiserverSockets(apiserverPort);
    const opened = [...during].filter((s) => !baseline.has(s));
    assert.ok(opened.length >= 3, `one upstream per machine (${opened.length} new connections to the apiserver)`);
    abort.abort();
    await eventually(
      'every upstream log request to end',
      async () => {
        const now = await apiserverSockets(apiserverPort);
        return opened.every((s) => !now.has(s));
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    assert.ok(reader.ended);
    await setMachines('talker', 2);
  });

  it('follows an app without machines with an open, empty stream; answers it empty without follow', async () => {
    await api.deps.apps.create(ns, 'quiet', {});
    const plain = await get('/api/apps/quiet/logs');
    assert.equal(plain.status, 200);
    assert.equal(await plain.text(), '');
    const abort = new AbortController();
    const res = await get('/api/apps/quiet/logs?follow=true', {}, abort.signal);
    assert.equal(res.status, 200, 'the status comes at once, before any line');
    const reader = new StreamReader(res);
    // Looked for machines again twice (every relistMs) and found none: nothing was sent meanwhile.
    const lists = listsOf('quiet');
    await eventually('two more looks for machines', () => listsOf('quiet') >= lists + 2, { timeoutMs: 20_000, intervalMs: 50 });
    assert.equal(reader.bytes, 0, 'nothing is sent while there is no machine');
    assert.equal(reader.ended, false);
    abort.abort();
  });

  it('ends a followed log when the app is deleted', async () => {
    await api.deps.apps.create(ns, 'shortlived', { kind: 'container', image: images.python, command: talkerCommand });
    const res = await eventually(
      'a line of shortlived',
      async () => {
        const r = await get('/api/apps/shortlived/logs?follow=true&tail=1');
        const reader = new StreamReader(r);
        try {
          await reader.waitFor('a line', () => true, 3_000);
          return reader;
        } catch {
          await r.body?.cancel().catch(() => undefined);
          return undefined;
        }
      },
      { timeoutMs: 60_000 },
    );
    await api.deps.apps.delete(ns, 'shortlived');
    await eventually('the stream to end', () => res.ended, { timeoutMs: 30_000 });
  });

  it('refuses an unknown app, bad query values and a token for another app', async () => {
    const error = async (path: string, status: number, headers: Record<string, string> = {}) => {
      const res = await get(path, headers);
      const text = await res.text();
      assert.equal(res.status, status, `${path}: ${text}`);
      return (JSON.parse(text) as { error: string }).error;
    };
    await error('/api/apps/nope/logs', 404);
    await error('/api/apps/nope/logs?follow=true', 404);
    assert.match(await error('/api/apps/talker/logs?tail=abc', 400), /tail/);
    assert.match(await error('/api/apps/talker/logs?tail=10001', 400), /tail/);
    assert.match(await error('/api/apps/talker/logs?tail=-1', 400), /tail/);
    assert.match(await error('/api/apps/talker/logs?since=yesterday', 400), /since/);
    assert.match(await error('/api/apps/talker/logs?since=2026-13-45', 400), /since/);
    assert.match(await error('/api/apps/talker/logs?follow=maybe', 400), /follow/);
    assert.match(await error('/api/apps/talker/logs?lines=5', 400), /lines/);
    const other = attenuate(api.token, [{ kind: 'apps', apps: ['quiet'] }]);
    assert.match(await error('/api/apps/talker/logs', 403, { authorization: `Bearer ${other}` }), /token lacks app "talker"/);
  });
});
