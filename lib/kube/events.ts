// Kubernetes Events (core/v1) about an object, as `kubectl describe` and `kubectl get events` show
// them. Recording is best effort: an Event that cannot be written is logged at debug and dropped,
// never failing the work it describes.
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../logger.js';

export type EventType = 'Normal' | 'Warning';

export interface EventSubject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
}

export class EventRecorder {
  constructor(
    private readonly core: k8s.CoreV1Api,
    /** The component as Events name it (`svc-controllers`). */
    private readonly component: string,
    /** Which instance (a node name, a pod name). */
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  record(subject: EventSubject, type: EventType, reason: string, message: string): void {
    const now = new Date();
    this.core
      .createNamespacedEvent({
        namespace: subject.namespace,
        body: {
          metadata: { generateName: `${subject.name}.`, namespace: subject.namespace },
          involvedObject: {
            apiVersion: subject.apiVersion,
            kind: subject.kind,
            name: subject.name,
            namespace: subject.namespace,
            uid: subject.uid,
          },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: this.component, host: this.instance },
          reportingComponent: this.component,
          reportingInstance: this.instance,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      })
      .catch((err: unknown) =>
        this.log.debug({ err, object: `${subject.kind} ${subject.namespace}/${subject.name}`, reason }, 'Event not recorded'),
      );
  }
}
