// What the machine meter reads of a Pod (api/usage/machine-meter.ts), pure: the current run and the
// one before the last restart, and how a run that ended is told.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { endOf, runsOf } from '../../api/usage/machine-meter.js';

const pod = (statuses: k8s.V1ContainerStatus[]): k8s.V1Pod => ({
  metadata: { name: 'shop-0-abc', namespace: 'acct-x', labels: { 'svc.dev/app': 'shop', 'svc.dev/machine': '1' } },
  spec: { nodeName: 'node-1', containers: [] },
  status: { containerStatuses: statuses },
});
const status = (s: Partial<k8s.V1ContainerStatus>): k8s.V1ContainerStatus => ({
  name: 'app',
  image: 'x',
  imageID: '',
  ready: true,
  restartCount: 0,
  ...s,
});

describe('machine runs', () => {
  it('reads the running run and the one before the last restart, per app and machine', () => {
    const runs = runsOf(
      pod([
        status({
          state: { running: { startedAt: new Date('2026-11-25T10:05:00Z') } },
          lastState: {
            terminated: {
              exitCode: 137,
              reason: 'OOMKilled',
              startedAt: new Date('2026-11-25T10:00:00Z'),
              finishedAt: new Date('2026-11-25T10:04:59Z'),
            },
          },
        }),
      ]),
    );
    assert.deepEqual(
      runs.map((r) => [r.subject, r.app, r.machine, r.node, r.startedAt.toISOString(), r.endedAt?.toISOString(), r.exit?.reason]),
      [
        ['shop/shop-0-abc', 'shop', 1, 'node-1', '2026-11-25T10:00:00.000Z', '2026-11-25T10:04:59.000Z', 'OOMKilled'],
        ['shop/shop-0-abc', 'shop', 1, 'node-1', '2026-11-25T10:05:00.000Z', undefined, undefined],
      ],
    );
  });

  it('reads nothing of a pod still fetching its artifact, of another container, or without the app label', () => {
    assert.deepEqual(runsOf(pod([status({ state: { waiting: { reason: 'PodInitializing' } } })])), []);
    assert.deepEqual(runsOf(pod([status({ name: 'fetch', state: { running: { startedAt: new Date() } } })])), []);
    const unlabeled = pod([status({ state: { running: { startedAt: new Date() } } })]);
    unlabeled.metadata!.labels = {};
    assert.deepEqual(runsOf(unlabeled), []);
  });

  it('tells a crash (non-zero exit, OOM) from a stop, and any end of a deleted pod as deleted', () => {
    const run = (exitCode: number, reason: string) => ({
      subject: 's',
      app: 'shop',
      machine: 0,
      pod: 'p',
      node: undefined,
      startedAt: new Date(),
      endedAt: new Date(),
      exit: { reason, exitCode },
    });
    assert.deepEqual(endOf(run(3, 'Error'), false), { type: 'machine.crashed', reason: 'Error', exitCode: 3 });
    assert.deepEqual(endOf(run(137, 'OOMKilled'), false), { type: 'machine.crashed', reason: 'OOMKilled', exitCode: 137 });
    assert.deepEqual(endOf(run(0, 'Completed'), false), { type: 'machine.stopped', reason: 'Completed' });
    assert.deepEqual(endOf(run(143, 'Error'), true), { type: 'machine.stopped', reason: 'deleted' });
  });
});
