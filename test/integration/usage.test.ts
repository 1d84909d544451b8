// test-runs-alone: it SIGKILLs and restarts the controllers every other file's Apps depend on.
// Usage that counts, on the real node: a running app's machine_seconds grow with the (injected)
// clock, per app, across a SIGKILL and restart of the controllers; a meter restarted goes on with the same run (no double count) and one started
// after a machine went closes its run at its last flush; a crashing machine is told with its exit
// code; the history answers calendar days.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { labels } from '../../lib/contract.js';
import { podInformer } from '../../lib/kube/pod-informer.js';
import { createLogger } from '../../lib/logger.js';
import { MachineMeter } from '../../api/usage/machine-meter.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { kill9, restart } from '../support/daemons.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

interface Usage {
  meters: Record<string, number>;
  apps: Record<string, { machine_seconds: number }>;
}

describe('Usage', () => {
  let api: TestApi;
  const usage = async () => (await (await api.request('GET', '/api/account/usage')).json()) as Usage;
  const events = async (kinds: string) =>
    (
      (await (await api.request('GET', `/api/events?kinds=${kinds}`)).json()) as {
        events: Array<{ type: string; subject: string; data: Record<string, unknown> }>;
      }
    ).events;
  const close = (a: number, b: number) => Math.abs(a - b) < 0.01;

  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });

  it('meters a running machine per app, goes on across a meter restart, and closes a run that ended while no meter ran', async () => {
    assert.equal((await api.request('POST', '/api/apps', { body: { name: 'metered' } })).status, 201);
    const deploy = (await (
      await api.request('POST', '/api/apps/metered/deploy', { body: { files: { 'index.html': 'metered' } } })
    ).json()) as { id: string };
    await eventually(
      'the deploy live',
      async () => ((await (await api.request('GET', `/api/deploys/${deploy.id}`)).json()) as { status: string }).status === 'live',
      { timeoutMs: 60_000 },
    );
    const [started] = await eventually('machine.started', async () => {
      const e = await events('machine.started');
      return e.length ? e : undefined;
    });
    assert.equal(started!.subject, 'metered');
    assert.equal(started!.data.machine, 0);

    api.clock.advance(120_000);
    await api.workers.machineMeter.flush();
    const u1 = await usage();
    const s1 = u1.meters.machine_seconds!;
    assert.ok(s1 > 60 && s1 <= 120, `about two minutes less the start's lag, got ${s1}`);
    assert.ok(close(u1.apps.metered!.machine_seconds, s1), 'the app carries all of it');

    // The controllers killed and restarted meanwhile: the machine runs on, metered as before.
    await kill9('controllers');
    await restart('dev.sh', 'up', 'controllers');
    api.clock.advance(60_000);
    await api.workers.machineMeter.flush();
    const s2 = (await usage()).meters.machine_seconds!;
    assert.ok(close(s2 - s1, 60), `a minute more, got ${s2 - s1}`);

    // A new meter (an API restarted) goes on with the same run: one open row, no double count.
    await api.workers.machineMeter.stop();
    const log = createLogger('api', 'silent');
    let informer = podInformer(api.kube.kc, labels.app, log);
    await informer.start();
    let meter = new MachineMeter(api.db, informer, log, api.clock.read);
    await meter.start();
    api.clock.advance(60_000);
    await meter.flush();
    const s3 = (await usage()).meters.machine_seconds!;
    assert.ok(close(s3 - s2, 60), `a minute more after the restart, got ${s3 - s2}`);
    const rows = await api
      .db('usage_records')
      .where({ account_id: api.account.id, meter: 'machine_seconds' })
      .select<Array<{ open: boolean }>>('open');
    assert.deepEqual(
      rows.map((r) => r.open),
      [true],
    );

    // The app deleted while no meter runs: the next meter closes the run at its last flush.
    await meter.stop();
    await informer.stop();
    assert.equal((await api.request('DELETE', '/api/apps/metered')).status, 204);
    await eventually(
      'the machine gone',
      async () =>
        (await api.kube.core.listNamespacedPod({ namespace: api.account.namespace, labelSelector: `${labels.app}=metered` })).items
          .length === 0,
      { timeoutMs: 60_000 },
    );
    api.clock.advance(3600_000);
    informer = podInformer(api.kube.kc, labels.app, log);
    await informer.start();
    meter = new MachineMeter(api.db, informer, log, api.clock.read);
    await meter.start();
    try {
      const stopped = await events('machine.stopped');
      assert.equal(stopped.length, 1);
      assert.equal(stopped[0]!.data.reason, 'gone while no meter ran');
      const s4 = (await usage()).meters.machine_seconds!;
      assert.ok(close(s4, s3), `nothing counted after the last flush, got ${s4} vs ${s3}`);
      assert.equal((await api.db('usage_records').where({ meter: 'machine_seconds', open: true }).count({ n: '*' }))[0]!.n, '0');
      const kinds = (await events('app.*')).map((e) => e.type);
      assert.deepEqual(kinds, ['app.created', 'app.deleted']);
    } finally {
      await meter.stop();
      await informer.stop();
    }
  });

  it('tells a machine that crashed, with its exit code', async () => {
    const log = createLogger('api', 'silent');
    const informer = podInformer(api.kube.kc, labels.app, log);
    await informer.start();
    const meter = new MachineMeter(api.db, informer, log, api.clock.read);
    await meter.start();
    try {
      assert.equal((await api.request('POST', '/api/apps', { body: { name: 'crashy', image: images.busybox } })).status, 201);
      assert.equal(
        (
          await api.request('POST', '/api/apps/crashy/deploy', {
            body: { image: images.busybox, command: ['sh', '-c', 'sleep 1; exit 3'] },
          })
        ).status,
        202,
      );
      const [crash] = await eventually(
        'machine.crashed',
        async () => {
          const e = await events('machine.crashed');
          return e.length ? e : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(crash!.subject, 'crashy');
      assert.equal(crash!.data.exit_code, 3);
      assert.equal(crash!.data.reason, 'Error');
      assert.ok(Number(crash!.data.seconds) >= 0);
    } finally {
      await api.request('DELETE', '/api/apps/crashy');
      await meter.stop();
      await informer.stop();
    }
  });

  it('answers the history by calendar day, splitting a run across midnight', async () => {
    const today = new Date(Date.UTC(api.clock.now.getUTCFullYear(), api.clock.now.getUTCMonth(), api.clock.now.getUTCDate()));
    const midnight = new Date(today.getTime() - 86_400_000); // yesterday's start
    await api.db('usage_records').insert({
      account_id: api.account.id,
      meter: 'build_seconds',
      subject: 'bld_1',
      quantity: 600,
      started_at: new Date(midnight.getTime() - 200_000),
      ended_at: new Date(midnight.getTime() + 400_000),
    });
    const res = await api.request('GET', '/api/account/usage/history?bucket=day&days=3');
    assert.equal(res.status, 200);
    const { history } = (await res.json()) as { history: Array<{ start: string; meters: Record<string, number> }> };
    assert.deepEqual(
      history.map((h) => [h.start, h.meters.build_seconds]),
      [
        [today.toISOString(), 0],
        [midnight.toISOString(), 400],
        [new Date(midnight.getTime() - 86_400_000).toISOString(), 200],
      ],
    );
    const bad = await api.request('GET', '/api/account/usage/history?bucket=day&months=2');
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: string }).error, /months goes with bucket=month, days with bucket=day/);
  });
});
