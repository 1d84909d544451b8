// Sandboxes as the API sees them: read from an informer's cache of every account's Sandbox objects,
// written as Sandbox custom resources in the account's namespace. Opening waits, on the cache, for
// the controllers to serve the Sandbox (Ready) or give it up (Failed), so an open costs one create
// and the watch events that follow, never a poll.
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { annotations, group, labels, managers, pluralOf, version } from '../../lib/contract.js';
import { kubeStatus, mergePatch } from '../../lib/kube/client.js';
import { createCustomObject, customInformer } from '../../lib/kube/custom-informer.js';
import { untilCached } from '../../lib/kube/until-cached.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox, SandboxSpec } from '../../lib/resources/index.js';

const plural = pluralOf('Sandbox');

/** Pending or Ready: counted against the account's open sandboxes. */
export function isOpen(s: Sandbox): boolean {
  return s.status?.phase !== 'Ended' && s.status?.phase !== 'Failed' && !s.spec.stopped;
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
  list(namespace: string): Sandbox[] {
    return [...this.informer.list(namespace)].sort(
      (a, b) =>
        String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)) ||
        a.metadata.name!.localeCompare(b.metadata.name!),
    );
  }

  /** By ID (its name) or its uid; only from the cache (a Sandbox just made by this API is in it). */
  find(namespace: string, id: string): Sandbox | undefined {
    return this.informer.get(id, namespace) ?? this.informer.list(namespace).find((s) => s.metadata.uid === id);
  }

  async create(namespace: string, spec: SandboxSpec, accountId: string): Promise<Sandbox> {
    const name = newSandboxName();
    return createCustomObject<Sandbox>(
      this.custom,
      'Sandbox',
      namespace,
      { name, labels: { [labels.managedBy]: managers.api, [labels.account]: accountId } },
      spec,
    );
  }

  /**
   * The Sandbox once `done` holds for it in the cache, or as the cache last showed it after
   * `timeoutMs` (undefined if it never showed it). Not there yet is not done: a Sandbox just
   * created reaches the cache a moment after the create answers.
   */
  async until(namespace: string, name: string, done: (s: Sandbox) => boolean, timeoutMs: number): Promise<Sandbox | undefined> {
    await untilCached<Sandbox>(this.informer, namespace, name, (c) => c !== undefined && done(c), timeoutMs);
    return this.informer.get(name, namespace);
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
