// The App's Services: `<app>` for its public service, and one per service the app's machines reach by name.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { servicesOf } from '../../lib/app-services.js';
import { labels } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';
import { managerName, ownerRef } from './owner.js';

/** The Service through which the app's machines reach service `service` by name (a DNS label of at most 63). */
export function serviceObjectName(app: string, service: string): string {
  const full = `${app}-${service}`;
  return full.length <= 63
    ? full
    : `${full.slice(0, 52).replace(/-+$/, '')}-${createHash('sha256').update(full).digest('hex').slice(0, 10)}`;
}

/** The app's Service, `<app>`: its public service's machines, which ingress-auth routes the app's hostname to. */
export function appService(app: App): k8s.V1Service {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.managedBy]: managerName },
      ownerReferences: [ownerRef(app)],
    },
    spec: { selector: { [labels.app]: name, [labels.public]: 'true' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  };
}

/**
 * The Services the app's machines reach its services by name through (an App with spec.services;
 * one per service with ports), on the ports the service listens on. Never routed from outside:
 * ingress-auth routes only `<app>`, and their ports are not named http.
 */
export function serviceServices(app: App): k8s.V1Service[] {
  if (!app.spec.services?.length) return [];
  const name = app.metadata.name!;
  return servicesOf(app.spec)
    .filter((v) => v.name !== undefined && v.ports.length)
    .map((v) => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: serviceObjectName(name, v.name!),
        namespace: app.metadata.namespace,
        labels: { [labels.app]: name, [labels.service]: v.name!, [labels.managedBy]: managerName },
        ownerReferences: [ownerRef(app)],
      },
      spec: {
        selector: { [labels.app]: name, ...(v.public ? { [labels.public]: 'true' } : { [labels.service]: v.name! }) },
        ports: v.ports.map((p) => ({ name: `p${p}`, port: p, targetPort: p })),
      },
    }));
}
