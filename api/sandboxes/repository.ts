// Sandboxes as the API sees them: read from an informer's cache of every account's Sandbox objects,
// written as Sandbox custom resources in the account's namespace. Opening waits, on the cache, for
// the controllers to serve the Sandbox (Ready) or give it up (Failed), so an open costs one create
// and the watch events that follow, never a poll. The service and the handlers read a Sandbox as a
// SandboxRecord (its fields named and typed, read once); the recorder follows the custom resources
// themselves (onChange).
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { annotations, group, labels, managers, pluralOf, version } from '../../lib/contract.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox, SandboxSpec } from '../../lib/resources/index.js';
import { resourcesOf, type SandboxResources } from '../../lib/sandbox/limits.js';

const plural = pluralOf('Sandbox');

/** Pending or Ready: counted against the account's open sandboxes. */
export function isOpen(s: Sandbox): boolean {
  return s.status?.phase !== 'Ended' && s.status?.phase !== 'Failed' && !s.spec.stopped;
}

type SandboxStatus = NonNullable<Sandbox['status']>;

/**
 * A Sandbox as the API's service and handlers see it: the custom resource read once into named,
 * typed fields. The controllers' timestamps stay as they wrote them (RFC 3339 strings): the API
 * answers them as they are.
 */
export interface SandboxRecord {
  /** Its name, also its ID in the API. */
  readonly id: string;
  readonly uid: string | undefined;
  readonly namespace: string;
  readonly runtime: string;
  readonly network: boolean;
  /** The limits of its pod, the platform's defaults filled in. */
  readonly resources: SandboxResources;
  readonly idleTimeoutSeconds: number;
  readonly maxLifetimeSeconds: number;
  /** Asked to end (spec.stopped). */
  readonly stopped: boolean;
  /** Pending or Ready, and not asked to end: counted against the account's open sandboxes. */
  readonly open: boolean;
  /** As the controllers report it; undefined until they have. */
  readonly phase: SandboxStatus['phase'];
  readonly reason: string | undefined;
  readonly message: string | undefined;
  readonly launch: SandboxStatus['launch'];
  readonly launchReason: string | undefined;
  readonly podName: string | undefined;
  /** The namespace its pod runs in (the sandboxes' own). */
  readonly podNamespace: string | undefined;
  /** Where the platform reaches its agent (host:port). */
  readonly address: string | undefined;
  readonly readyAt: string | undefined;
  readonly lastActivityAt: string | undefined;
  readonly idleExpiresAt: string | undefined;
  readonly expiresAt: string | undefined;
  readonly endedAt: string | undefined;
  readonly createdAt: Date | undefined;
}

const records = new WeakMap<Sandbox, SandboxRecord>();

/** The record of a Sandbox as read (informer objects are immutable: one record each). */
export function sandboxRecord(s: Sandbox): SandboxRecord {
  const known = records.get(s);
  if (known) return known;
  const st = s.status ?? {};
  const record: SandboxRecord = Object.freeze({
    id: s.metadata.name!,
    uid: s.metadata.uid,
    namespace: s.metadata.namespace!,
    runtime: s.spec.runtime,
    network: s.spec.network === true,
    resources: resourcesOf(s.spec.resources),
    idleTimeoutSeconds: s.spec.idleTimeoutSeconds ?? 300,
    maxLifetimeSeconds: s.spec.maxLifetimeSeconds ?? 3600,
    stopped: s.spec.stopped === true,
    open: isOpen(s),
    phase: st.phase,
    reason: st.reason,
    message: st.message,
    launch: st.launch,
    launchReason: st.launchReason,
    podName: st.podName,
    podNamespace: st.podNamespace,
    address: st.address,
    readyAt: st.readyAt,
    lastActivityAt: st.lastActivityAt,
    idleExpiresAt: st.idleExpiresAt,
    expiresAt: st.expiresAt,
    endedAt: st.endedAt,
    createdAt: s.metadata.creationTimestamp ? new Date(s.metadata.creationTimestamp) : undefined,
  });
  records.set(s, record);
  return record;
}

/** Sandbox names: `sb-` and 16 hex digits (64 random bits), also the sandbox's ID in the API. */
export function newSandboxName(): string {
  return `sb-${randomBytes(8).toString('hex')}`;
}

export class SandboxRepository {
  private readonly informer: k8s.ListWatch<Sandbox>;
  private readonly custom: k8s.CustomObjectsApi;

  constructor(kc: k8s.KubeConfig, log: Logger) {
    ({ informer: this.informer, custom: this.custom } = customInformer<Sandbox>(kc, plural, log));
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** The account's sandboxes, newest first. */
  list(namespace: string): SandboxRecord[] {
    return [...this.informer.list(namespace)]
      .sort(
        (a, b) =>
          String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)) ||
          a.metadata.name!.localeCompare(b.metadata.name!),
      )
      .map(sandboxRecord);
  }

  /** By ID (its name) or its uid; only from the cache (a Sandbox just made by this API is in it). */
  find(namespace: string, id: string): SandboxRecord | undefined {
    const s = this.resource(namespace, id);
    return s && sandboxRecord(s);
  }

  private resource(namespace: string, id: string): Sandbox | undefined {
    return this.informer.get(id, namespace) ?? this.informer.list(namespace).find((c) => c.metadata.uid === id);
  }

  async create(namespace: string, spec: SandboxSpec, accountId: string): Promise<SandboxRecord> {
    const name = newSandboxName();
    const created = await createCustomObject<Sandbox>(
      this.custom,
      'Sandbox',
      namespace,
      { name, labels: { [labels.managedBy]: managers.api, [labels.account]: accountId } },
      spec,
    );
    return sandboxRecord(created);
  }

  /**
   * The Sandbox once `done` holds for it in the cache, or as the cache last showed it after
   * `timeoutMs` (undefined if it never showed it). Not there yet is not done: a Sandbox just
   * created reaches the cache a moment after the create answers.
   */
  async until(namespace: string, name: string, done: (s: SandboxRecord) => boolean, timeoutMs: number): Promise<SandboxRecord | undefined> {
    await untilCached<Sandbox>(this.informer, namespace, name, (c) => c !== undefined && done(sandboxRecord(c)), timeoutMs);
    const s = this.informer.get(name, namespace);
    return s && sandboxRecord(s);
  }

  /** Ends the sandbox (spec.stopped; the controllers delete its pod, reason Deleted). */
  async stopSandbox(namespace: string, name: string): Promise<void> {
    try {
      await this.custom.patchNamespacedCustomObject(
        { group, version, namespace, plural, name, body: { spec: { stopped: true } } },
        mergePatch,
      );
    } catch (err) {
      if (kubeStatus(err) === 404) return; // gone already: nothing left to stop
      throw err;
    }
  }

  /** Writes what the API saw of the sandbox's use (lib/sandbox/activity.ts); nothing when it is gone. */
  async recordActivity(namespace: string, name: string, value: string): Promise<void> {
    try {
      await this.custom.patchNamespacedCustomObject(
        { group, version, namespace, plural, name, body: { metadata: { annotations: { [annotations.activity]: value } } } },
        mergePatch,
      );
    } catch (err) {
      if (kubeStatus(err) === 404) return;
      throw err;
    }
  }

  /** Calls `fn` with every Sandbox the cache adds or changes (the recorder follows endings). */
  onChange(fn: (s: Sandbox) => void): void {
    this.informer.on('add', fn);
    this.informer.on('update', fn);
  }
}
