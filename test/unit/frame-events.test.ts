// The frame's Events (controllers/frame/events.ts): the involvedObject built from the object a
// kind's reconciler names, handed to the recorder that creates the Event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { KindEvents, referenceTo, type EventSink } from '../../controllers/frame/events.js';
import { EventRecorder } from '../../lib/kube/events.js';
import { createLogger } from '../../lib/logger.js';

const app = {
  apiVersion: 'ignored/v0',
  kind: 'Ignored',
  metadata: { name: 'web', namespace: 'acct-a', uid: 'uid-1', resourceVersion: '3' },
};

/** A sink that keeps what it is given. */
function fakeSink() {
  const recorded: Array<Parameters<EventSink['record']>> = [];
  const sink: EventSink = { record: (...args) => void recorded.push(args) };
  return { recorded, sink };
}

describe('Event references', () => {
  it('names the object by the kind and apiVersion given, not what the object carries', () => {
    assert.deepEqual(referenceTo(app, 'App'), {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'App',
      name: 'web',
      namespace: 'acct-a',
      uid: 'uid-1',
    });
    assert.deepEqual(referenceTo(app, 'Thing', 'example.com/v2'), {
      apiVersion: 'example.com/v2',
      kind: 'Thing',
      name: 'web',
      namespace: 'acct-a',
      uid: 'uid-1',
    });
  });

  it('records a kind’s Events with the reference built, and nothing without a sink', () => {
    const { recorded, sink } = fakeSink();
    const events = new KindEvents(sink, 'Database');
    events.record(app, 'Warning', 'QuotaExceeded', 'exceeded quota');
    events.normal(app, 'Ready', 'serving');
    events.warning(app, 'ServerFailed', 'ended');
    const ref = { apiVersion: 'svc.dev/v1alpha1', kind: 'Database', name: 'web', namespace: 'acct-a', uid: 'uid-1' };
    assert.deepEqual(recorded, [
      [ref, 'Warning', 'QuotaExceeded', 'exceeded quota'],
      [ref, 'Normal', 'Ready', 'serving'],
      [ref, 'Warning', 'ServerFailed', 'ended'],
    ]);
    assert.doesNotThrow(() => new KindEvents(undefined, 'App').record(app, 'Normal', 'Expired', 'gone'));
  });

  it('creates the Event in the object’s namespace, about it', async () => {
    const created: Array<{ namespace: string; body: k8s.CoreV1Event }> = [];
    const core = { createNamespacedEvent: async (o: { namespace: string; body: k8s.CoreV1Event }) => created.push(o) };
    const recorder = new EventRecorder(core as unknown as k8s.CoreV1Api, 'svc-controllers', 'host-1', createLogger('test', 'silent'));
    new KindEvents(recorder, 'Sandbox').record(app, 'Normal', 'Ended', 'the sandbox ended');
    await new Promise((r) => setImmediate(r));
    assert.equal(created.length, 1);
    assert.equal(created[0]!.namespace, 'acct-a');
    const body = created[0]!.body;
    assert.deepEqual(body.involvedObject, {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Sandbox',
      name: 'web',
      namespace: 'acct-a',
      uid: 'uid-1',
    });
    assert.deepEqual(
      [body.type, body.reason, body.message, body.reportingComponent],
      ['Normal', 'Ended', 'the sandbox ended', 'svc-controllers'],
    );
  });
});
