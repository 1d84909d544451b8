// Which stored artifacts each account keeps (docs/decisions/0024-artifact-retention.md): observed →
// desired, pure, so the collector (api/storage/collector.ts) only gathers what is and acts on the
// answer. An account keeps a digest when something it has may still need the bytes:
//
// - an App that exists (a preview too) serves or rolls out that tree, or its current deploy names it;
// - one of an existing App's newest `rollbackDeploys` deploys that went live names it (its rollback
//   window), or a deploy of it still in flight does;
// - a build that has not ended takes it as its source or made it as its output, or an ended build made
//   it within `buildGraceMs` and no deploy of it was recorded (a deployed one is kept as a deploy);
// - a recorded backup is it (a database keeps its newest seven, lib/backups.ts);
// - the account stored or reused it within `graceMs` (an upload racing the record that names it).
//
// Build logs are the platform's records, not the account's artifacts: no account holds them, and
// keptBuildLogs says which the collector leaves (each for `buildLogMs` after its build ended).
//
// Anything else the account holds is released: its bytes stop counting, and the file goes once no
// account holds it. Deploys of deleted Apps keep nothing: a deleted App cannot be rolled back.

export interface RetentionPolicy {
  /** Live deploys of each App, newest first, whose artifacts stay for rollbacks (besides the current one). */
  rollbackDeploys: number;
  /** Nothing stored or reused more recently than this is released. */
  graceMs: number;
  /** An ended build's output not (yet) deployed stays this long after the build ended. */
  buildGraceMs: number;
  /** An ended build's log stays this long after the build ended. */
  buildLogMs: number;
}

export interface ObservedApp {
  accountId: string;
  uid: string;
  name: string;
  preview: boolean;
  /** The tree its spec names and the one its live revision serves (a rollout may differ). */
  digests: string[];
  /** The deploy it serves (status.currentDeploy) and the one its spec was written for. */
  deploys: string[];
}

export interface ObservedDeploy {
  accountId: string;
  id: string;
  appUid: string;
  /** Creation order (deploys.seq). */
  seq: number;
  digest: string | null;
  status: 'pending' | 'building' | 'deploying' | 'live' | 'failed';
}

export interface ObservedBuild {
  accountId: string;
  id: string;
  ended: boolean;
  sourceDigest: string | null;
  outputDigest: string | null;
  /** A deploy of its output was recorded. */
  deployed: boolean;
  completedAt: Date | null;
  /** Its kept log, once it ended. */
  logDigest?: string | null;
}

export interface ObservedBackup {
  accountId: string;
  database: string;
  digest: string;
}

export interface ObservedHold {
  accountId: string;
  digest: string;
  usedAt: Date;
}

export interface Observed {
  now: Date;
  apps: readonly ObservedApp[];
  deploys: readonly ObservedDeploy[];
  builds: readonly ObservedBuild[];
  backups: readonly ObservedBackup[];
  holds: readonly ObservedHold[];
}

/** Per account, each digest it keeps and the first reason found (for logs and tests). */
export type Retained = Map<string, Map<string, string>>;

const inFlight = new Set(['pending', 'building', 'deploying']);

export function retainedArtifacts(o: Observed, policy: RetentionPolicy): Retained {
  const kept: Retained = new Map();
  const keep = (accountId: string, digest: string | null | undefined, why: string) => {
    if (!digest) return;
    let mine = kept.get(accountId);
    if (!mine) kept.set(accountId, (mine = new Map<string, string>()));
    if (!mine.has(digest)) mine.set(digest, why);
  };
  const apps = new Map(o.apps.map((a) => [a.uid, a]));
  for (const a of o.apps) for (const d of a.digests) keep(a.accountId, d, `${a.preview ? 'preview' : 'app'} ${a.name} serves it`);

  const byApp = new Map<string, ObservedDeploy[]>();
  for (const d of o.deploys) {
    if (!d.digest || !apps.has(d.appUid)) continue;
    const list = byApp.get(d.appUid) ?? [];
    list.push(d);
    byApp.set(d.appUid, list);
  }
  for (const [uid, deploys] of byApp) {
    const app = apps.get(uid)!;
    const current = new Set(app.deploys);
    let window = 0;
    for (const d of [...deploys].sort((x, y) => y.seq - x.seq)) {
      if (current.has(d.id)) keep(d.accountId, d.digest, `the current deploy ${d.id} of ${app.name}`);
      else if (inFlight.has(d.status)) keep(d.accountId, d.digest, `deploy ${d.id} of ${app.name} is in flight`);
      else if (d.status === 'live' && window < policy.rollbackDeploys) {
        window += 1;
        keep(d.accountId, d.digest, `deploy ${d.id} is in ${app.name}'s rollback window`);
      }
    }
  }

  const now = o.now.getTime();
  for (const b of o.builds) {
    if (!b.ended) {
      keep(b.accountId, b.sourceDigest, `build ${b.id} has not ended`);
      keep(b.accountId, b.outputDigest, `build ${b.id} has not ended`);
    } else if (b.outputDigest && !b.deployed && (!b.completedAt || now - b.completedAt.getTime() < policy.buildGraceMs)) {
      keep(b.accountId, b.outputDigest, `build ${b.id}'s output is not deployed yet`);
    }
  }
  for (const b of o.backups) keep(b.accountId, b.digest, `a backup of database ${b.database}`);
  for (const h of o.holds) if (now - h.usedAt.getTime() < policy.graceMs) keep(h.accountId, h.digest, 'stored within the grace period');
  return kept;
}

/** The build logs the collector leaves in the store although no account holds them: each for `buildLogMs` after its build ended. */
export function keptBuildLogs(o: Pick<Observed, 'now' | 'builds'>, policy: Pick<RetentionPolicy, 'buildLogMs'>): Set<string> {
  const now = o.now.getTime();
  const kept = new Set<string>();
  for (const b of o.builds) if (b.logDigest && (!b.completedAt || now - b.completedAt.getTime() < policy.buildLogMs)) kept.add(b.logDigest);
  return kept;
}
