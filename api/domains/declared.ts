// Domains declared on an App (`spec.domains`, applied with kubectl or committed by a GitOps flow) are
// added and removed exactly as through `POST/DELETE /apps/{app}/domains`: claimed for the account of
// the App's namespace, within its limits, verified by the same verifier, served the same way
// (docs/decisions/0028-https.md). One writer per fact: this sync only calls the domain actions; what
// it cannot add (another account holds the name, a limit, a name the platform never serves) is told
// as a Warning Event on the App, which `kubectl describe app` shows, and tried again at the next
// resync. A domain added through the API is never removed here: only those this sync declared.
import type { App } from '../../lib/resources/index.js';
import type { EventSubject, EventType } from '../../lib/kube/events.js';
import type { Logger } from '../../lib/logger.js';
import type { AppRecord } from '../repositories/app-record.js';
import { appRecord } from '../repositories/app-record.js';
import type { DomainRecord } from '../repositories/domains.js';
import type { DomainActions } from './actions.js';
import { group, version } from '../../lib/resources/index.js';

/** What a sync of one App does: the names to add and the declared ones to remove. */
export interface DeclaredPlan {
  add: string[];
  remove: string[];
}

/**
 * The pure step: `declared` (spec.domains) against the App's present domains. A present domain the
 * API added (`declared: false`) stays whatever the spec says; a Failed one declared is added again
 * (as `add` does for a failed name); names are compared lowercased, without a trailing dot.
 */
export function planDeclared(
  declared: readonly string[] | undefined,
  present: ReadonlyArray<Pick<DomainRecord, 'name' | 'declared' | 'phase'>>,
): DeclaredPlan {
  const wanted = new Set((declared ?? []).map(normal));
  const have = new Map(present.map((d) => [normal(d.name), d]));
  const add = [...wanted].filter((n) => {
    const d = have.get(n);
    return !d || d.phase === 'Failed';
  });
  const remove = present.filter((d) => d.declared && !wanted.has(normal(d.name))).map((d) => d.name);
  return { add: add.sort(), remove: remove.sort() };
}

const normal = (n: string) => n.trim().toLowerCase().replace(/\.$/, '');

export interface DeclaredDomainDeps {
  apps: { all(): readonly App[]; onChange(fn: (app: App) => void): void };
  domains: { list(namespace: string, app: string): DomainRecord[] };
  actions: Pick<DomainActions, 'add' | 'remove'>;
  /** The account whose namespace this is (lib/accounts.ts NamespaceAccounts). */
  accountOf(namespace: string): Promise<string | undefined>;
  /** A Kubernetes Event about the App (lib/kube/events.ts). */
  recordEvent(subject: EventSubject, type: EventType, reason: string, message: string): void;
  log: Logger;
  /** How often every App is synced again (to retry what was refused); default 60 s. */
  resyncMs?: number;
  /**
   * Whether this replica leads the recorder's Lease: only the leader syncs, so a refusal is told once,
   * not once per API replica, and replicas never race to add one name. A new leader syncs every App
   * at its next resync. Undefined: this one leads (tests).
   */
  isLeader?: () => boolean;
}

export class DeclaredDomains {
  private timer: NodeJS.Timeout | undefined;
  private leadershipTimer: NodeJS.Timeout | undefined;
  /** Apps waiting for a sync, by `namespace/name`: one sync at a time per App, changes coalesced. */
  private readonly pending = new Map<string, App>();
  private readonly running = new Set<string>();
  /** The last refusal told per App and name, so a resync does not repeat the same Event. */
  private readonly told = new Map<string, string>();
  private stopped = false;

  constructor(private readonly d: DeclaredDomainDeps) {}

  start(): void {
    this.d.apps.onChange((app) => this.enqueue(app));
    for (const app of this.d.apps.all()) this.enqueue(app);
    this.timer = setInterval(() => {
      for (const app of this.d.apps.all()) if (app.spec?.domains?.length || this.anyDeclared(app)) this.enqueue(app);
    }, this.d.resyncMs ?? 60_000);
    this.timer.unref();
    // A replica that comes to lead catches up at once on what it skipped while it did not (the
    // first syncs above, at start, usually run before the Lease is won), not at the next resync.
    let led = this.leading();
    this.leadershipTimer = setInterval(() => {
      const leads = this.leading();
      if (leads && !led) for (const app of this.d.apps.all()) this.enqueue(app);
      led = leads;
    }, 1_000);
    this.leadershipTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.leadershipTimer) clearInterval(this.leadershipTimer);
  }

  private leading(): boolean {
    return this.d.isLeader?.() ?? true;
  }

  private anyDeclared(app: App): boolean {
    return this.d.domains.list(app.metadata.namespace!, app.metadata.name!).some((d) => d.declared);
  }

  private enqueue(app: App): void {
    if (this.stopped || app.metadata.deletionTimestamp || !app.metadata.namespace || !app.metadata.name) return;
    const key = `${app.metadata.namespace}/${app.metadata.name}`;
    this.pending.set(key, app);
    if (!this.running.has(key)) void this.drain(key);
  }

  private async drain(key: string): Promise<void> {
    this.running.add(key);
    try {
      for (let app = this.pending.get(key); app && !this.stopped; app = this.pending.get(key)) {
        this.pending.delete(key);
        await this.sync(app).catch((err: unknown) =>
          this.d.log.warn({ err, app: key }, 'Declared domains not synced; retried at the next resync'),
        );
      }
    } finally {
      this.running.delete(key);
    }
  }

  /** Brings one App's domains to its `spec.domains`. */
  async sync(app: App): Promise<DeclaredPlan> {
    if (!this.leading()) return { add: [], remove: [] };
    const namespace = app.metadata.namespace!;
    const record = appRecord(app);
    const plan = planDeclared(app.spec?.domains, this.d.domains.list(namespace, record.name));
    if (!plan.add.length && !plan.remove.length) return plan;
    const accountId = await this.d.accountOf(namespace);
    if (!accountId) return plan; // not an account's namespace: nobody to claim names for
    const actor = { accountId, namespace, createdBy: 'app-spec' };
    for (const name of plan.add) await this.addOne(app, record, actor, name);
    for (const name of plan.remove) {
      await this.d.actions.remove(actor, record, name);
      this.told.delete(`${namespace}/${record.name}/${name}`);
    }
    return plan;
  }

  private async addOne(app: App, record: AppRecord, actor: { accountId: string; namespace: string; createdBy: string }, name: string) {
    const key = `${actor.namespace}/${record.name}/${name}`;
    try {
      await this.d.actions.add(actor, record, name, { declared: true });
      this.told.delete(key);
    } catch (err) {
      const message = `spec.domains ${name}: ${(err as Error).message}`;
      if (this.told.get(key) === message) return;
      this.told.set(key, message);
      this.d.recordEvent(subjectOf(app), 'Warning', 'DomainRefused', message);
    }
  }
}

function subjectOf(app: App): EventSubject {
  return {
    apiVersion: `${group}/${version}`,
    kind: 'App',
    name: app.metadata.name!,
    namespace: app.metadata.namespace!,
    uid: app.metadata.uid!,
  };
}
