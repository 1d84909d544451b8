// What happens to an app besides a plain deploy, beside the deployer: rolling back (which deploy to
// return to), forking, previews, and moving a machine (which node). Handlers parse and present;
// the decisions are made here and raise domain errors (lib/errors.ts).
import { labels, previewSeparator } from '../../lib/contract.js';
import type { Deploy, DeployStore } from '../../lib/deploys.js';
import { DomainError } from '../../lib/errors.js';
import type { AppRecord } from '../repositories/app-record.js';
import type { AppRepository } from '../repositories/apps.js';
import type { EnvRepository } from '../repositories/env.js';
import type { MachineRepository } from '../repositories/machines.js';
import type { VolumeRepository } from '../repositories/volumes.js';
import type { DatabaseRepository } from '../repositories/databases.js';
import { branchName } from '../../lib/databases.js';
import type { Database } from '../../lib/resources/index.js';
import { within, type AccountLock } from '../quotas.js';
import type { AccountStorage } from '../storage/account-storage.js';
import { volumeClaimName } from '../../lib/volumes.js';
import type { App } from '../../lib/resources/index.js';
import { createServing, deploySpecOf, specAfter, type Deployer, type Prepared } from './deployer.js';
import { recordOutcomes } from './recorder.js';

/**
 * The App once the controller has reported on its current spec (at most `waitMs`, then as it is,
 * read again by `find` every 20 ms): the status that plans the newest deploy is the one that records
 * what the machines served before it, so a rollback asked the moment a deploy is served steps back
 * from what was served, not past it. An App deleted or made again meanwhile: the last one read.
 */
export async function reportedOn(
  app: AppRecord,
  find: (app: AppRecord) => Promise<AppRecord | undefined>,
  waitMs = 3000,
): Promise<AppRecord> {
  const deadline = Date.now() + waitMs;
  let latest = app;
  while (!latest.observed && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const again = await find(app);
    if (!again || again.id !== app.id) return latest;
    latest = again;
  }
  return latest;
}

export const previewName = (parent: string, ref: string) => `${parent}${previewSeparator}${ref}`;

export interface Actor {
  accountId: string;
  namespace: string;
  /** Who asked, as deploy records name it (`token:<nonce>`). */
  createdBy: string;
}

export class AppActions {
  constructor(
    private readonly d: {
      apps: AppRepository;
      env: EnvRepository;
      deploys: DeployStore;
      deployer: Deployer;
      machines: MachineRepository;
      volumes: Pick<VolumeRepository, 'pinnedNode'>;
      databases: Pick<DatabaseRepository, 'get' | 'list' | 'createBranch'>;
      /** The account's limits, checked and taken under its lock (api/quotas.ts). */
      quota: {
        lock: Pick<AccountLock, 'hold'>;
        limits: { apps: number; previewsPerApp: number; databases: number };
        /** The account's storage as its limit counts it: databases, volumes (made and declared), stored artifacts. */
        storage: Pick<AccountStorage, 'assertFits' | 'newVolumeBytes' | 'holdStored'>;
        databaseBytes: (db: Database) => number;
      };
    },
  ) {}

  /** Refuses (403 quota_exceeded) one more app of the account; previews count. Call under the account's lock. */
  assertAppFits(namespace: string): void {
    const apps = this.d.apps.list(namespace).length;
    within(apps, 1, this.d.quota.limits.apps, 'apps (previews included)', 'delete one first');
  }

  /**
   * A new deploy of an earlier live one: `deployId`, or the last live one before the newest deploy
   * (the one serving, or in flight: a rollback then undoes it). What went live is the controller's
   * word (the App's status); the rows are brought up to it first, so a deploy served a moment ago
   * counts even where the recorder has not written it yet.
   */
  async rollback(actor: Actor, asked: AppRecord, deployId?: string): Promise<Deploy> {
    const name = asked.name;
    const app = await reportedOn(asked, (a) => this.d.apps.find(a.namespace, a.name));
    await recordOutcomes(this.d.deploys, app.id, app.status?.deploys);
    let target: Deploy | undefined;
    if (deployId) {
      target = await this.d.deploys.get(actor.accountId, deployId);
      if (!target || target.appUid !== app.id) throw new DomainError('not_found', `deploy ${deployId} of app ${name} not found`);
      if (target.status !== 'live')
        throw new DomainError('conflict', `deploy ${target.id} never went live (${target.status}); roll back to a deploy that served`);
    } else {
      // The newest deploy, unless it failed: then what serves is what a rollback steps back from.
      const newest = app.spec.deployId ? await this.d.deploys.get(actor.accountId, app.spec.deployId) : undefined;
      const current = newest && newest.status !== 'failed' ? newest.id : (app.status?.currentDeploy ?? app.spec.deployId);
      if (!current) throw new DomainError('conflict', `app ${name} has no deploy to roll back from`);
      target = await this.d.deploys.previousLive(app.id, current);
      if (!target) throw new DomainError('conflict', `app ${name} has no live deploy before ${current} to roll back to`);
    }
    // The account holds the tree again (counted against its storage), unless it was collected.
    if (
      target.spec.source &&
      !(await this.d.quota.storage.holdStored(
        actor.accountId,
        actor.namespace,
        target.spec.source.digest,
        `the rollback to deploy ${target.id}`,
      ))
    ) {
      throw new DomainError(
        'conflict',
        `the artifact of deploy ${target.id} is no longer stored: it was outside app ${name}'s rollback window when artifacts were collected; deploy it again`,
      );
    }
    return this.d.deployer.apply(
      actor.accountId,
      app,
      { spec: target.spec, origin: 'rollback', summary: { ...target.summary, rollback_to: target.id } },
      { originDeploy: target.id, createdBy: actor.createdBy },
    );
  }

  /**
   * A new app serving what `source` serves, with its configuration and environment; not its
   * domains, app users, previews, database, expiry, machine placement or volumes' data.
   */
  async fork(actor: Actor, source: AppRecord, name: string): Promise<{ app: AppRecord; deploy?: Deploy }> {
    return this.d.quota.lock.hold(actor.accountId, () => this.forkHeld(actor, source, name));
  }

  private async forkHeld(actor: Actor, source: AppRecord, name: string): Promise<{ app: AppRecord; deploy?: Deploy }> {
    if (await this.d.apps.find(actor.namespace, name)) throw new DomainError('conflict', `an app named "${name}" already exists`);
    this.assertAppFits(actor.namespace);
    const spec = deploySpecOf(source);
    const originDeploy = source.status?.currentDeploy ?? source.spec.deployId;
    // The fork's volumes are its own: counted against storage before it declares them.
    const forked: App['spec'] = {
      ...(source.spec.machines !== undefined ? { machines: source.spec.machines } : {}),
      ...(source.spec.volumes?.length ? { volumes: source.spec.volumes } : {}),
      ...(spec?.services ? { services: spec.services } : {}),
    };
    const more = this.d.quota.storage.newVolumeBytes(actor.namespace, name, forked);
    await this.d.quota.storage.assertFits(actor.accountId, actor.namespace, more, `the fork's volumes need ${more} more bytes`);
    return createServing(
      this.d,
      actor.accountId,
      actor.namespace,
      { name, labels: { [labels.forkedFrom]: source.name } },
      {
        ...(source.spec.machines !== undefined ? { machines: source.spec.machines } : {}),
        ...(source.spec.resources ? { resources: source.spec.resources } : {}),
        ...(source.spec.auth ? { auth: source.spec.auth } : {}),
        // The same volumes, its own and empty: data is not copied.
        ...(source.spec.volumes?.length ? { volumes: source.spec.volumes } : {}),
      },
      spec ? { spec, origin: 'fork', summary: { forked_from: source.name, ...(originDeploy ? { deploy: originDeploy } : {}) } } : undefined,
      { origin: 'fork', ...(originDeploy ? { originDeploy } : {}), createdBy: actor.createdBy, env: await this.d.env.read(source) },
    );
  }

  /**
   * A preview of `parent` on `ref`: `prepared`, or else what the parent serves. A parent with a
   * database gives the preview a branch of it (a copy, deleted with the preview): `branch` names it.
   */
  async createPreview(
    actor: Actor,
    parent: AppRecord,
    ref: string,
    prepared: Prepared | undefined,
  ): Promise<{ app: AppRecord; deploy?: Deploy; branch?: string }> {
    return this.d.quota.lock.hold(actor.accountId, () => this.createPreviewHeld(actor, parent, ref, prepared));
  }

  private async createPreviewHeld(
    actor: Actor,
    parent: AppRecord,
    ref: string,
    prepared: Prepared | undefined,
  ): Promise<{ app: AppRecord; deploy?: Deploy; branch?: string }> {
    if (parent.spec.preview) throw new DomainError('invalid', `app ${parent.name} is itself a preview`);
    const name = previewName(parent.name, ref);
    if (name.length > 63) throw new DomainError('invalid', `invalid body: ref: "${name}" would be longer than 63 characters`);
    let originDeploy: string | undefined;
    if (!prepared) {
      const spec = deploySpecOf(parent);
      originDeploy = parent.status?.currentDeploy ?? parent.spec.deployId;
      if (spec) prepared = { spec, origin: 'preview', summary: { from: parent.name, ...(originDeploy ? { deploy: originDeploy } : {}) } };
    }
    if (await this.d.apps.find(actor.namespace, name))
      throw new DomainError('conflict', `preview ${ref} of app ${parent.name} already exists`);
    // Its branch is a server of our own: a physical copy of a server of our own, a logical one of a
    // CloudNativePG Cluster (docs/decisions/0039-cloudnative-pg.md).
    const source = parent.spec.database ? this.d.databases.get(actor.namespace, parent.spec.database) : undefined;
    if (parent.spec.database && (!source || source.metadata.deletionTimestamp))
      throw new DomainError('conflict', `app ${parent.name}'s database ${parent.spec.database} is not there to branch for the preview`);
    const branch = source ? branchName(source.metadata.name!, name) : undefined;
    // The account's limits, counted and taken under its lock: the app, the parent's previews, and a
    // branch's database and bytes (as large as its source's), however the preview is asked for.
    this.assertAppFits(actor.namespace);
    const previews = this.d.apps.list(actor.namespace).filter((a) => a.spec.preview?.parent === parent.name).length;
    within(
      previews,
      1,
      this.d.quota.limits.previewsPerApp,
      `previews of app ${parent.name}`,
      'delete one first (DELETE /apps/{app}/previews/{ref})',
    );
    if (source)
      within(
        this.d.databases.list(actor.namespace).length,
        1,
        this.d.quota.limits.databases,
        'databases (branches included)',
        'delete one first',
      );
    // Its branch (as large as its source) and its own volumes, counted together against storage.
    // A branch is a server of our own, one copy, whatever serves its source.
    const branchBytes = source ? this.d.quota.databaseBytes({ ...source, spec: { ...source.spec, provider: 'pods' } }) : 0;
    const volumes: App['spec'] = { machines: 1, ...(parent.spec.volumes?.length ? { volumes: parent.spec.volumes } : {}) };
    const volumeBytes = this.d.quota.storage.newVolumeBytes(actor.namespace, name, prepared ? specAfter(volumes, prepared) : volumes);
    const needs = [
      source ? `its branch of database ${source.metadata.name} needs ${branchBytes} bytes` : '',
      volumeBytes ? `its volumes need ${volumeBytes} bytes` : '',
    ]
      .filter(Boolean)
      .join(' and ');
    await this.d.quota.storage.assertFits(actor.accountId, actor.namespace, branchBytes + volumeBytes, `the preview: ${needs}`);
    const made = await createServing(
      this.d,
      actor.accountId,
      actor.namespace,
      {
        name,
        labels: { [labels.previewOf]: parent.name },
        owner: parent,
      },
      {
        preview: { parent: parent.name, ref },
        machines: 1,
        ...(parent.spec.resources ? { resources: parent.spec.resources } : {}),
        ...(parent.spec.auth ? { auth: parent.spec.auth } : {}),
        ...(parent.spec.volumes?.length ? { volumes: parent.spec.volumes } : {}),
        // Its machines get the branch's address once its server's Service has one.
        ...(branch ? { database: branch } : {}),
      },
      prepared,
      {
        origin: prepared?.origin ?? 'preview',
        ...(originDeploy ? { originDeploy } : {}),
        createdBy: actor.createdBy,
        env: await this.d.env.read(parent),
      },
    );
    if (!source || !branch) return made;
    try {
      await this.d.databases.createBranch(actor.namespace, branch, source, made.app);
    } catch (err) {
      // Nothing half-made: the preview goes (its deploy record says why).
      await this.d.apps.delete(actor.namespace, made.app.name).catch(() => undefined);
      if (made.deploy)
        await this.d.deploys
          .finish(made.deploy.id, {
            status: 'failed',
            reason: `the preview's database branch could not be made: ${err instanceof Error ? err.message : String(err)}`,
          })
          .catch(() => undefined);
      throw err;
    }
    return { ...made, branch };
  }

  /**
   * Pins machine `ordinal` to `node` (default: another ready node). The controller starts the
   * replacement there and deletes the old machine once the new one is ready, as for a deploy.
   */
  async migrate(app: AppRecord, ordinal: number, node?: string): Promise<{ ordinal: number; from: string | null; to: string }> {
    if (ordinal >= (app.spec.machines ?? 1)) throw new DomainError('not_found', `machine ${ordinal} of app ${app.name} not found`);
    const from = app.status?.machines?.find((m) => m.ordinal === ordinal)?.node ?? null;
    const nodes = await this.d.machines.readyNodes();
    let to: string | undefined;
    if (node) {
      if (!nodes.includes(node)) throw new DomainError('invalid', `invalid body: node: ${node} is not a ready node`);
      if (node === from) throw new DomainError('conflict', `machine ${ordinal} already runs on ${from}`);
      to = node;
    } else {
      to = nodes.find((n) => n !== from);
      if (!to) throw new DomainError('conflict', `no other ready node to move machine ${ordinal} to`);
    }
    // A volume on node-local storage cannot follow the machine: say so rather than start it on an
    // empty one (docs/decisions/0018-volumes.md).
    for (const v of app.spec.volumes ?? []) {
      const claim = volumeClaimName(app.name, v.name, ordinal);
      const pinned = this.d.volumes.pinnedNode(app.namespace, claim);
      if (pinned && pinned !== to) {
        throw new DomainError(
          'conflict',
          `machine ${ordinal} keeps volume ${v.name} (${claim}, at ${v.path}) on node ${pinned}, whose storage is local to it: the machine cannot move to ${to} without leaving its data behind`,
        );
      }
    }
    // On the App as written: a placement changed meanwhile is kept, not overwritten.
    await this.d.apps.updateSpec(app.namespace, app.name, (fresh) => ({
      placement: [...(fresh.spec.placement ?? []).filter((p) => p.ordinal !== ordinal), { ordinal, node: to }].sort(
        (a, b) => a.ordinal - b.ordinal,
      ),
    }));
    return { ordinal, from, to };
  }
}
