// Kubernetes Events about the objects a controller reconciles, as controller-runtime's
// EventRecorder: a kind's recorder builds the Event's involvedObject from the object itself and
// hands it to lib/kube/events.ts, which creates the Event (best effort: never failing the work it
// describes). Every reconciler that records Events does it through here.
import type * as k8s from '@kubernetes/client-node';
import { apiVersion as ourApiVersion } from '../../lib/contract.js';
import type { EventRecorder, EventSubject, EventType } from '../../lib/kube/events.js';

/** Where Events go: lib/kube/events.ts's recorder (or a fake). */
export type EventSink = Pick<EventRecorder, 'record'>;

/** What an Event about `obj`, a `kind` of `apiVersion` (ours by default), names as its involvedObject. */
export function referenceTo(obj: k8s.KubernetesObject, kind: string, apiVersion: string = ourApiVersion): EventSubject {
  const m = obj.metadata!;
  return { apiVersion, kind, name: m.name!, namespace: m.namespace!, uid: m.uid! };
}

/** Records Events about objects of one kind; without a sink, records nothing. */
export class KindEvents<T extends k8s.KubernetesObject = k8s.KubernetesObject> {
  constructor(
    private readonly sink: EventSink | undefined,
    private readonly kind: string,
    private readonly apiVersion: string = ourApiVersion,
  ) {}

  record(obj: T, type: EventType, reason: string, message: string): void {
    this.sink?.record(referenceTo(obj, this.kind, this.apiVersion), type, reason, message);
  }

  normal(obj: T, reason: string, message: string): void {
    this.record(obj, 'Normal', reason, message);
  }

  warning(obj: T, reason: string, message: string): void {
    this.record(obj, 'Warning', reason, message);
  }
}
