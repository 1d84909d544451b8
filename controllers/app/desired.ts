// The App reconciler's pure half: from an App and the machines (Pods) observed for it, what should
// exist (its Service and one Pod per machine ordinal at the current revision), what should go, and
// the status to report. No I/O here; controllers/app/reconciler.ts applies the result.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { apiVersion, type App } from '../../lib/resources/index.js';

export const labels = {
  app: 'svc.dev/app',
  machine: 'svc.dev/machine',
  revision: 'svc.dev/revision',
  managedBy: 'app.kubernetes.io/managed-by',
} as const;
export const managerName = 'svc-controllers';

export interface AppSettings {
  appsDomain: string;
  appsUrlSuffix: string;
}

function ownerRef(app: App): k8s.V1OwnerReference {
  return { apiVersion, kind: 'App', name: app.metadata.name!, uid: app.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

/** The machine container, as the App describes it. Only container services run so far. */
function container(app: App): k8s.V1Container {
  const port = app.spec.port ?? 8080;
  const limits = Object.fromEntries(Object.entries(app.spec.resources ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>;
  return {
    name: 'app',
    image: app.spec.image,
    ...(app.spec.command ? { command: app.spec.command } : {}),
    ...(app.spec.args ? { args: app.spec.args } : {}),
    ports: [{ name: 'http', containerPort: port }],
    env: [{ name: 'PORT', value: String(port) }, ...(app.spec.env ?? []).map((e) => ({ name: e.name, value: e.value ?? '' }))],
    ...(app.spec.envSecretName ? { envFrom: [{ secretRef: { name: app.spec.envSecretName } }] } : {}),
    ...(Object.keys(limits).length ? { resources: { limits } } : {}),
    readinessProbe: { tcpSocket: { port: port as unknown as k8s.IntOrString }, periodSeconds: 1, failureThreshold: 2 },
  };
}

/** A short hash of everything that shapes a machine: a change means new machines. */
export function revisionOf(app: App): string {
  const shape = JSON.stringify({ c: container(app), d: app.spec.deployId ?? null, s: app.spec.source ?? null });
  return createHash('sha256').update(shape).digest('hex').slice(0, 10);
}

export function machinePod(app: App, ordinal: number, revision: string): k8s.V1Pod {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${name}-m${ordinal}-${revision}`,
      namespace: app.metadata.namespace,
      labels: { [labels.app]: name, [labels.machine]: String(ordinal), [labels.revision]: revision, [labels.managedBy]: managerName },
      annotations: { ...(app.spec.deployId ? { 'svc.dev/deploy': app.spec.deployId } : {}) },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      containers: [container(app)],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 10,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // Machines of one app prefer different nodes.
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { [labels.app]: name } } },
      ],
    },
  };
}

export function appService(app: App): k8s.V1Service {
  const name = app.metadata.name!;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: app.metadata.namespace, labels: { [labels.app]: name, [labels.managedBy]: managerName }, ownerReferences: [ownerRef(app)] },
    spec: { selector: { [labels.app]: name }, ports: [{ name: 'http', port: 80, targetPort: 'http' as unknown as k8s.IntOrString }] },
  };
}

export function podReady(pod: k8s.V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

function broken(pod: k8s.V1Pod): string | undefined {
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') return `machine ${pod.metadata?.name} ended (${pod.status.phase})`;
  const waiting = pod.status?.containerStatuses?.find((s) => s.state?.waiting && s.state.waiting.reason !== 'ContainerCreating')?.state?.waiting;
  return waiting ? `${waiting.reason}: ${waiting.message ?? ''}`.trim() : undefined;
}

export interface Plan {
  create: k8s.V1Pod[];
  delete: k8s.V1Pod[];
  status: NonNullable<App['status']>;
  /** Re-check after this many ms even without a change (expiry, waits). */
  requeueMs?: number;
  /** The App's expiry passed: delete it. */
  expired: boolean;
}

/**
 * For each ordinal, a machine of the current revision is started next to an older one, which goes
 * only once the new one is Ready: a one-machine app keeps serving through a deploy.
 */
export function plan(app: App, pods: k8s.V1Pod[], settings: AppSettings, now: Date): Plan {
  const expiresAt = app.spec.expiresAt ? new Date(app.spec.expiresAt) : undefined;
  const revision = revisionOf(app);
  // Only container services have a machine image so far; the runtime serving artifacts (static,
  // html, markdown, handlers) arrives with deploys. Such Apps run no machine and say why.
  const servable = app.spec.kind === 'container';
  const want = app.spec.suspended || !servable ? 0 : (app.spec.machines ?? 1);
  const create: k8s.V1Pod[] = [];
  const del: k8s.V1Pod[] = [];
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const problems: string[] = [];
  const machines: NonNullable<NonNullable<App['status']>['machines']> = [];
  let ready = 0;
  let current = 0;
  for (const p of live) {
    const ordinal = Number(p.metadata?.labels?.[labels.machine]);
    if (!Number.isInteger(ordinal) || ordinal >= want) del.push(p);
  }
  for (let ordinal = 0; ordinal < want; ordinal++) {
    const mine = live.filter((p) => Number(p.metadata?.labels?.[labels.machine]) === ordinal);
    const fresh = mine.find((p) => p.metadata?.labels?.[labels.revision] === revision);
    const old = mine.filter((p) => p !== fresh);
    if (!fresh) create.push(machinePod(app, ordinal, revision));
    else if (podReady(fresh)) del.push(...old);
    // A failed machine of the current revision is replaced.
    if (fresh && (fresh.status?.phase === 'Failed' || fresh.status?.phase === 'Succeeded')) {
      del.push(fresh);
    }
    const serving = [fresh, ...old].find((p) => p && podReady(p));
    if (serving) ready += 1;
    if (fresh && podReady(fresh)) current += 1;
    const problem = fresh && broken(fresh);
    if (problem) problems.push(`machine ${ordinal}: ${problem}`);
    const shown = serving ?? fresh;
    if (shown) {
      const phase = shown.status?.phase;
      machines.push({
        ordinal,
        pod: shown.metadata!.name!,
        ...(shown.spec?.nodeName ? { node: shown.spec.nodeName } : {}),
        ...(shown.status?.podIP ? { address: shown.status.podIP } : {}),
        state: podReady(shown) ? 'running' : phase === 'Failed' ? 'failed' : phase === 'Running' ? 'starting' : 'pending',
        ...(shown.metadata?.annotations?.['svc.dev/deploy'] ? { deploy: shown.metadata.annotations['svc.dev/deploy'] } : {}),
        ...(shown.status?.startTime ? { startedAt: new Date(shown.status.startTime).toISOString() } : {}),
      });
    }
  }
  const progressing = current < want || live.length > want;
  const isReady = ready === want && want > 0;
  const gen = app.metadata.generation ?? 0;
  const previous = app.status?.conditions ?? [];
  const condition = (type: string, ok: boolean, reason: string, message: string) => {
    const before = previous.find((c) => c.type === type);
    const status = ok ? 'True' : 'False';
    return { type, status: status as 'True' | 'False', reason, message, observedGeneration: gen, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now.toISOString() };
  };
  const host = `${app.metadata.name}.${settings.appsDomain}`;
  return {
    create,
    delete: [...new Set(del)],
    expired: expiresAt !== undefined && expiresAt.getTime() <= now.getTime(),
    ...(expiresAt && expiresAt.getTime() > now.getTime() ? { requeueMs: expiresAt.getTime() - now.getTime() } : {}),
    status: {
      observedGeneration: gen,
      url: `http://${host}${settings.appsUrlSuffix}`,
      ready: `${ready}/${want}`,
      readyMachines: ready,
      ...(current === want && want > 0 && app.spec.deployId ? { currentDeploy: app.spec.deployId } : app.status?.currentDeploy ? { currentDeploy: app.status.currentDeploy } : {}),
      machines,
      conditions: [
        !app.spec.kind
          ? condition('Ready', false, 'NotDeployed', 'the app has no deploy yet')
          : servable
            ? condition('Ready', isReady, isReady ? 'MachinesReady' : want === 0 ? 'NoMachines' : 'MachinesNotReady', `${ready} of ${want} machines ready`)
            : condition('Ready', false, 'KindNotServedYet', `${app.spec.kind} apps are served once the runtime fetches deploy artifacts; only container apps run machines so far`),
        condition('Progressing', progressing, progressing ? 'RollingOut' : 'UpToDate', progressing ? `${current} of ${want} machines at revision ${revision}` : `all machines at revision ${revision}`),
        condition('Degraded', problems.length > 0, problems.length ? 'MachinesFailing' : 'AsExpected', problems.join('; ') || 'no machine is failing'),
      ],
    },
  };
}
