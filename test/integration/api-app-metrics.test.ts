// GET /apps/{appID}/metrics/{path} against the test cluster and a fresh database: request metrics
// recorded through the recorder (as the auth proxy will) and flushed show up summed per step; a
// machine that holds ~50 MB and spins reports its memory and CPU, read through the apiserver's node
// proxy from node-agent's /stats/summary.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RequestRecorder } from '../../lib/metrics/requests.js';
import type { AppRecord } from '../../api/repositories/app-record.js';
import { attenuate } from '../../lib/tokens/token.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';
import { images } from '../support/images.js';

// Serves HTTP (so the machine becomes Ready), holds 50 MB it has written to, and spins ~20% of a core.
const hogScript = `
const b = Buffer.alloc(50 * 1024 * 1024, 7);
require('http').createServer((q, s) => s.end('ok ' + b[0])).listen(Number(process.env.PORT), process.env.HOST);
setInterval(() => { const end = Date.now() + 20; while (Date.now() < end); }, 100);
`;

interface RequestsBody {
  app: string;
  app_id: string;
  start: string;
  end: string;
  step_seconds: number;
  total: { requests: number; status: Record<string, number> };
  points: Array<{ time: string; requests: number; status: Record<string, number> }>;
}

interface LatencyBody {
  unit: string;
  total: { requests: number; p50: number | null; p90: number | null; p99: number | null; mean: number | null };
  points: Array<{ time: string; requests: number; p50: number | null; p90: number | null; p99: number | null; mean: number | null }>;
}

interface Machine {
  machine: number | null;
  pod: string;
  node: string | null;
  phase: string;
  cpu_cores: number | null;
  memory_bytes: number | null;
  memory_usage_bytes: number | null;
  sampled_at: string | null;
  unavailable: string | null;
}

describe('API app metrics', () => {
  let api: TestApi;
  let app: AppRecord;
  let recorder: RequestRecorder;

  const get = async <T>(path: string, status = 200, token?: string): Promise<T> => {
    const res = await api.request('GET', path, token ? { token } : {});
    const body = (await res.json()) as T;
    assert.equal(res.status, status, JSON.stringify(body));
    return body;
  };

  before(async () => {
    api = await startTestApi();
    app = await api.deps.apps.create(api.account.namespace, 'hog', {
      kind: 'container',
      image: images.node,
      command: ['node', '-e', hogScript],
      machines: 1,
    });
    recorder = new RequestRecorder(api.db, { flushIntervalMs: 60_000 });
  });
  after(async () => {
    await recorder?.stop();
    await api?.close();
  });

  it('sums recorded requests per status class and step, across flushes into the same minute', async () => {
    const at = api.clock.read();
    const sample = (status: number, durationMs: number, appUid = app.id) =>
      recorder.record({ namespace: api.account.namespace, app: 'hog', appUid, status, durationMs, at });
    for (let i = 0; i < 3; i++) sample(200, 10);
    sample(404, 4);
    sample(503, 900);
    // An earlier app of the same name (another uid) is not this app.
    sample(200, 10, '00000000-0000-4000-8000-000000000000');
    // Ten minutes ago: in the window, in another step.
    recorder.record({
      namespace: api.account.namespace,
      app: 'hog',
      appUid: app.id,
      status: 302,
      durationMs: 1,
      at: new Date(at.getTime() - 10 * 60_000),
    });
    await recorder.flush();
    assert.equal(recorder.pendingMinutes, 0);
    // A second flush adds to the stored minute rather than replacing it.
    sample(200, 30);
    sample(500, 2);
    await recorder.flush();

    const body = await get<RequestsBody>('/api/apps/hog/metrics/requests?since=30m&step=5m');
    assert.equal(body.app, 'hog');
    assert.equal(body.app_id, app.id);
    assert.equal(body.step_seconds, 300);
    assert.equal(body.points.length, 6);
    assert.deepEqual(body.total, { requests: 8, status: { '2xx': 4, '3xx': 1, '4xx': 1, '5xx': 2 } });
    const last = body.points.at(-1)!;
    assert.deepEqual({ requests: last.requests, status: last.status }, { requests: 7, status: { '2xx': 4, '3xx': 0, '4xx': 1, '5xx': 2 } });
    assert.equal(
      body.points.reduce((n, p) => n + p.requests, 0),
      8,
    );
    assert.equal(Date.parse(body.end) - Date.parse(body.start), 30 * 60_000);
    for (let i = 1; i < body.points.length; i++)
      assert.equal(Date.parse(body.points[i]!.time) - Date.parse(body.points[i - 1]!.time), 300_000);

    // By ID as well as by name; the default window is the last hour in minutes.
    const byId = await get<RequestsBody>(`/api/apps/${app.id}/metrics/requests`);
    assert.equal(byId.points.length, 60);
    assert.equal(byId.total.requests, 8);
  });

  it('answers latency percentiles per step from the histogram', async () => {
    const body = await get<LatencyBody>('/api/apps/hog/metrics/latency?since=2m&step=1m');
    assert.equal(body.unit, 'ms');
    assert.equal(body.points.length, 2);
    const last = body.points.at(-1)!;
    assert.equal(last.requests, 7);
    // 10, 10, 10, 4, 900, 30, 2 ms: the median falls in (5, 10], the p99 in (750, 1000].
    assert.ok(last.p50! > 5 && last.p50! <= 10, `p50 ${last.p50}`);
    assert.ok(last.p99! > 750 && last.p99! <= 1000, `p99 ${last.p99}`);
    assert.ok(last.p90! <= last.p99!);
    assert.equal(last.mean, Math.round((966 / 7) * 1000) / 1000);
    assert.equal(body.points[0]!.p50, null, 'no requests, no percentiles');
    assert.equal(body.points[0]!.requests, 0);
  });

  it('answers the CPU and memory of each running machine', async () => {
    const machines = await eventually(
      'the machine to report its memory and CPU',
      async () => {
        const body = await get<{ app: string; time: string; machines: Machine[] }>('/api/apps/hog/metrics/machines');
        const m = body.machines[0];
        return m && m.memory_bytes !== null && m.memory_bytes > 40 * 1024 * 1024 && (m.cpu_cores ?? 0) > 0 ? body.machines : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    );
    assert.equal(machines.length, 1);
    const m = machines[0]!;
    assert.equal(m.machine, 0);
    assert.match(m.pod, /^hog-m0-/);
    assert.match(m.node ?? '', /^local-[ab]$/);
    assert.equal(m.phase, 'Running');
    assert.equal(m.unavailable, null);
    assert.ok(m.cpu_cores! < 4, `cpu ${m.cpu_cores} is a core count`);
    assert.ok(m.memory_usage_bytes! >= m.memory_bytes!);
    assert.ok(Math.abs(Date.parse(m.sampled_at!) - Date.now()) < 60_000);

    const summary = await get<{ requests: { total: number; per_second: number }; latency: { p50: number | null }; machines: Machine[] }>(
      '/api/apps/hog/metrics/summary?since=15m',
    );
    assert.equal(summary.requests.total, 8);
    assert.ok(summary.requests.per_second > 0);
    assert.ok(summary.latency.p50 !== null);
    assert.equal(summary.machines.length, 1);
  });

  it('answers 404 for an unknown path, naming the known ones, and 400 for a bad query', async () => {
    const unknown = await get<{ error: string }>('/api/apps/hog/metrics/cpu', 404);
    assert.match(unknown.error, /requests, latency, machines, summary/);
    assert.match((await get<{ error: string }>('/api/apps/nope/metrics/requests', 404)).error, /app nope not found/);
    assert.match((await get<{ error: string }>('/api/apps/hog/metrics/requests?step=90s', 400)).error, /whole minutes/);
    assert.match((await get<{ error: string }>('/api/apps/hog/metrics/requests?since=soon', 400)).error, /since/);
    assert.match((await get<{ error: string }>('/api/apps/hog/metrics/requests?window=1h', 400)).error, /invalid query/);
  });

  it('refuses a token restricted to another app, by name and by ID', async () => {
    const other = attenuate(api.token, [{ kind: 'apps', apps: ['quiet'] }]);
    assert.match((await get<{ error: string }>('/api/apps/hog/metrics/requests', 403, other)).error, /token lacks app "hog"/);
    assert.match((await get<{ error: string }>(`/api/apps/${app.id}/metrics/machines`, 403, other)).error, /token lacks app "hog"/);
    const mine = attenuate(api.token, [{ kind: 'apps', apps: ['hog'] }]);
    assert.equal((await get<RequestsBody>('/api/apps/hog/metrics/requests', 200, mine)).total.requests, 8);
  });
});
