// The Database reconciler's pure half (controllers/database/desired.ts): what a Database is made
// of, who may reach its server (the attached app, its own branches and backups: issue 30 finding 2),
// and its phase from what the caches show.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { backupCredentialExpiry, plan, type DatabaseSettings } from '../../controllers/database/desired.js';
import { checkArtifactCredential, checkBackupCredential } from '../../lib/artifacts/credential.js';
import {
  cnpgCluster,
  cnpgPlan,
  cnpgPolicy,
  cnpgRestore,
  cnpgService,
  cnpgStatus,
  providerOf,
  restoredConditions,
} from '../../controllers/database/cnpg.js';
import type { App, Database } from '../../lib/resources/index.js';

const settings: DatabaseSettings = {
  image: 'reg/svc/postgres:1',
  storageClass: undefined,
  defaultBytes: 1 << 30,
  platformCidrs: ['10.244.0.1/32'],
};
const db: Database = {
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Database',
  metadata: { name: 'orders', namespace: 'acct', uid: 'u1' },
  spec: { storageBytes: 5 << 20 },
};
/** Backup settings with the machine listener at 10.244.0.1:8080, their credentials minted with `key`. */
const backupsWith = (key: Buffer): NonNullable<DatabaseSettings['backups']> => ({
  key,
  schedule: '30 3 * * *',
  platformPorts: [{ port: 8080 }],
  artifactBaseUrl: 'http://10.244.0.1:8080/artifacts',
  backupBaseUrl: 'http://10.244.0.1:8080/backups',
});
const pod = (status: k8s.V1PodStatus, image = settings.image): k8s.V1Pod => ({
  metadata: { name: 'db-orders-0', labels: { 'svc.dev/database': 'orders' } },
  spec: { containers: [{ name: 'postgres', image }] },
  status,
});
const service: k8s.V1Service = { metadata: { name: 'db-orders' }, spec: { clusterIP: '10.96.0.7' } };
const claim: k8s.V1PersistentVolumeClaim = { metadata: { name: 'db-orders-data' }, status: { phase: 'Bound' } };

describe('database plan', () => {
  it("makes a non-root server on its own volume, reading its credentials from the API's Secret, reachable by no app while none is attached", () => {
    const p = plan(db, { pod: undefined, claim: undefined, service: undefined, attachedApps: [] }, settings);
    const c = p.createPod!.spec!.containers[0]!;
    assert.equal(c.image, settings.image);
    assert.deepEqual(
      c
        .env!.filter((e) => e.valueFrom)
        .map((e) => [e.name, e.valueFrom!.secretKeyRef!.name, e.valueFrom!.secretKeyRef!.key, e.valueFrom!.secretKeyRef!.optional]),
      [
        ['PGUSER', 'db-orders-credentials', 'username', undefined],
        ['PGPASSWORD', 'db-orders-credentials', 'password', undefined],
        ['PGDATABASE', 'db-orders-credentials', 'database', undefined],
        // Its svc_replicator's: a Secret made before the key still starts a server (no branch can copy it).
        ['SVC_REPLICATION_PASSWORD', 'db-orders-credentials', 'replication-password', true],
      ],
    );
    assert.equal(p.createPod!.spec!.securityContext!.runAsNonRoot, true);
    assert.equal(c.securityContext!.readOnlyRootFilesystem, true);
    assert.deepEqual(c.securityContext!.capabilities, { drop: ['ALL'] });
    assert.equal(p.claim.spec!.resources!.requests!.storage, String(5 << 20));
    assert.equal(p.createPod!.metadata!.ownerReferences![0]!.uid, 'u1');
    const from = (p.policy.spec!.ingress![0] as unknown as { from: unknown[] }).from;
    assert.deepEqual(from, [
      {
        podSelector: {
          matchLabels: { 'svc.dev/branch-of': 'orders' },
          matchExpressions: [{ key: 'svc.dev/database', operator: 'Exists' }],
        },
      },
      { podSelector: { matchLabels: { 'svc.dev/backup-of': 'orders' } } },
      { ipBlock: { cidr: '10.244.0.1/32' } },
    ]);
    assert.deepEqual(p.policy.spec!.egress, []);
    assert.equal(p.status.phase, 'Pending');
    assert.equal(p.ready.message, 'its volume is being provisioned');
  });

  it('bounds the node disk of its server, backup and CloudNativePG instances (ephemeral-storage)', () => {
    const server = plan(db, { pod: undefined, claim: undefined, service: undefined, attachedApps: [] }, settings).createPod!.spec!;
    const withBackups: DatabaseSettings = {
      ...settings,
      backups: {
        key: Buffer.alloc(32, 2),
        schedule: '30 3 * * *',
        platformPorts: [{ port: 8080 }],
        artifactBaseUrl: 'http://10.244.0.1:8080/artifacts',
        backupBaseUrl: 'http://10.244.0.1:8080/backups',
      },
    };
    const backup = plan(db, { pod: undefined, claim, service, attachedApps: [] }, withBackups, new Date('2026-11-25T12:00:00Z')).backup!
      .cronJob.spec!.jobTemplate.spec!.template.spec!;
    for (const c of [...server.containers, ...backup.containers]) {
      assert.equal(c.resources?.requests?.['ephemeral-storage'], '64Mi', c.name);
      assert.equal(c.resources?.limits?.['ephemeral-storage'], '256Mi', c.name);
    }
    const cluster = cnpgCluster(db, { ...settings, provider: 'cloudnative-pg' });
    assert.deepEqual(cluster.spec!.resources, { requests: { 'ephemeral-storage': '64Mi' }, limits: { 'ephemeral-storage': '256Mi' } });
  });

  it('runs its server and backups in a user namespace of their own when the platform says so', () => {
    const own: DatabaseSettings = {
      ...settings,
      userNamespaces: true,
      backups: {
        key: Buffer.alloc(32, 2),
        schedule: '30 3 * * *',
        platformPorts: [{ port: 8080 }],
        artifactBaseUrl: 'http://a',
        backupBaseUrl: 'http://b',
      },
    };
    const p = plan(db, { pod: undefined, claim, service, attachedApps: [] }, own, new Date('2026-11-25T12:00:00Z'));
    assert.equal(p.createPod!.spec!.hostUsers, false);
    assert.equal(p.backup!.cronJob.spec!.jobTemplate.spec!.template.spec!.hostUsers, false);
    assert.equal(plan(db, { pod: undefined, claim, service, attachedApps: [] }, settings).createPod!.spec!.hostUsers, undefined);
  });

  it('is Ready with its address once the server is ready, names the app attached, and says why it failed', () => {
    const readyPod = pod({ conditions: [{ type: 'Ready', status: 'True' }] });
    const app = { metadata: { name: 'shop' }, spec: { database: 'orders' } } as App;
    const ready = plan(db, { pod: readyPod, claim, service, attachedApps: [app] }, settings);
    assert.deepEqual(
      [ready.status.phase, ready.status.host, ready.status.port, ready.status.attachedTo, ready.createPod],
      ['Ready', '10.96.0.7', 5432, 'shop', undefined],
    );
    assert.deepEqual(
      (ready.policy.spec!.ingress![0] as unknown as { from: unknown[] }).from[0],
      { podSelector: { matchExpressions: [{ key: 'svc.dev/app', operator: 'In', values: ['shop'] }] } },
      "the attached app's machines, not the account's every app",
    );
    assert.equal(ready.status.usedBytes, undefined, 'no size before its volume is measured');
    const measured = plan(
      db,
      {
        pod: readyPod,
        claim: { ...claim, metadata: { ...claim.metadata, annotations: { 'svc.dev/used-bytes': '41943040' } } },
        service,
        attachedApps: [],
      },
      settings,
    );
    assert.equal(measured.status.usedBytes, 41943040, "the size its volume's provisioner measured");
    const noSecret = plan(
      db,
      {
        pod: pod({
          containerStatuses: [
            {
              name: 'postgres',
              image: '',
              imageID: '',
              ready: false,
              restartCount: 0,
              state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "db-orders-credentials" not found' } },
            },
          ],
        }),
        claim,
        service,
        attachedApps: [],
      },
      settings,
    );
    assert.equal(noSecret.status.phase, 'Failed');
    assert.match(noSecret.ready.message, /is the Secret db-orders-credentials there, with keys username, password, database\?/);
    const ended = plan(db, { pod: pod({ phase: 'Failed' }), claim, service, attachedApps: [] }, settings);
    assert.ok(ended.deletePod && ended.createPod, 'an ended server is replaced');
    const upgraded = plan(
      db,
      { pod: pod({ conditions: [{ type: 'Ready', status: 'True' }] }, 'reg/svc/postgres:0'), claim, service, attachedApps: [] },
      settings,
    );
    assert.equal(upgraded.deletePod?.metadata?.name, 'db-orders-0', 'a server on another image is replaced');
  });

  it('backs up nightly and on request with a credential for this database only, and restores from a dump once', () => {
    const key = Buffer.alloc(32, 7);
    const withBackups: DatabaseSettings = {
      ...settings,
      backups: backupsWith(key),
    };
    const now = new Date('2026-11-25T12:00:00Z');
    assert.equal(
      plan(db, { pod: undefined, claim, service: undefined, attachedApps: [] }, withBackups, now).backup,
      undefined,
      'no backup before the server has an address',
    );
    assert.equal(
      plan(db, { pod: undefined, claim, service, attachedApps: [] }, settings, now).backup,
      undefined,
      'none without backup settings',
    );
    const p = plan(db, { pod: undefined, claim, service, attachedApps: [] }, withBackups, now).backup!;
    assert.deepEqual(
      [p.cronJob.metadata?.name, p.cronJob.spec?.schedule, p.cronJob.spec?.concurrencyPolicy],
      ['db-orders-backup', '30 3 * * *', 'Forbid'],
    );
    const c = p.cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!;
    const env = Object.fromEntries((c.env ?? []).filter((e) => e.value).map((e) => [e.name, e.value]));
    assert.deepEqual(
      [c.args, env.SVC_BACKUP_HOST, env.SVC_BACKUP_URL],
      [['backup'], '10.96.0.7', 'http://10.244.0.1:8080/backups/acct/orders'],
    );
    assert.deepEqual(checkBackupCredential(key, 'acct', 'orders', env.SVC_BACKUP_TOKEN, now), { ok: true });
    assert.equal(checkBackupCredential(key, 'acct', 'other', env.SVC_BACKUP_TOKEN, now).ok, false, 'it opens no other database');
    assert.ok(backupCredentialExpiry(now).getTime() - now.getTime() >= 28 * 86_400_000, 'valid four weeks at least');
    assert.equal(
      backupCredentialExpiry(now).getTime(),
      backupCredentialExpiry(new Date(now.getTime() + 3600_000)).getTime(),
      'the CronJob does not change every hour',
    );
    assert.deepEqual(
      p.policy.spec?.egress?.map((e) => e.to),
      [[{ podSelector: { matchLabels: { 'svc.dev/database': 'orders' } } }], [{ ipBlock: { cidr: '10.244.0.1/32' } }]],
    );
    const named = plan(db, { pod: undefined, claim, service, attachedApps: [] }, { ...withBackups, clusterDns: true }, now).backup!;
    assert.deepEqual(
      named.policy.spec?.egress?.[2]?.ports,
      [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
      "the cluster DNS too, where it answers: the platform's URL may be a Service name",
    );
    assert.equal(p.requested, undefined);
    const asked: Database = { ...db, metadata: { ...db.metadata, annotations: { 'svc.dev/backup-requested': 'now-1' } } };
    const job = plan(asked, { pod: undefined, claim, service, attachedApps: [] }, withBackups, now).backup!.requested!;
    assert.match(job.metadata!.name!, /^db-orders-backup-[0-9a-f]{8}$/);
    assert.equal(
      plan(asked, { pod: undefined, claim, service, attachedApps: [], backupJobs: [job] }, withBackups, now).backup!.requested,
      undefined,
      'one Job per request',
    );
    const custom: Database = { ...db, spec: { ...db.spec, backupUrl: 'http://10.244.0.1:18001/backups' } };
    const url = plan(
      custom,
      { pod: undefined, claim, service, attachedApps: [] },
      withBackups,
      now,
    ).backup!.cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env!.find((e) => e.name === 'SVC_BACKUP_URL')?.value;
    assert.equal(url, 'http://10.244.0.1:18001/backups/acct/orders', 'where the API that keeps its backups said');

    const digest = `sha256:${'a'.repeat(64)}`;
    const restored: Database = { ...db, spec: { ...db.spec, restoreFrom: { backup: 'bk-1', digest } } };
    const r = plan(restored, { pod: undefined, claim, service, attachedApps: [] }, withBackups, now);
    const renv = Object.fromEntries((r.createPod!.spec!.containers[0]!.env ?? []).filter((e) => e.value).map((e) => [e.name, e.value]));
    assert.equal(renv.SVC_RESTORE_URL, `http://10.244.0.1:8080/artifacts/${digest}`);
    assert.deepEqual(checkArtifactCredential(key, digest, renv.SVC_RESTORE_TOKEN, now), { ok: true });
    assert.equal(r.policy.spec!.egress!.length, 1, 'out to the artifact endpoint to fetch its dump');
    const restoredReady = plan(
      restored,
      { pod: pod({ conditions: [{ type: 'Ready', status: 'True' }] }), claim, service, attachedApps: [] },
      withBackups,
      now,
    );
    assert.deepEqual(restoredReady.policy.spec!.egress, [], 'and no more once the server is up');
  });

  it("on CloudNativePG: a Cluster with the API's credentials, the same Service name, and the Cluster's status mapped", () => {
    const onCnpg: DatabaseSettings = {
      ...settings,
      provider: 'cloudnative-pg',
      cnpg: { image: 'reg/cnpg/postgresql:16', operatorNamespace: 'cnpg-system', instances: 2 },
      storageClass: 'fast',
    };
    assert.equal(providerOf(db, settings), 'pods');
    assert.equal(providerOf(db, onCnpg), 'cloudnative-pg');
    assert.equal(providerOf({ ...db, spec: { ...db.spec, provider: 'pods' } }, onCnpg), 'pods', "a Database's own provider wins");
    const c = cnpgCluster(db, onCnpg);
    assert.deepEqual(
      [c.apiVersion, c.kind, c.metadata?.name, c.metadata?.ownerReferences?.[0]?.uid],
      ['postgresql.cnpg.io/v1', 'Cluster', 'db-orders', 'u1'],
    );
    assert.deepEqual(c.spec, {
      instances: 2,
      postgresql: { synchronous: { method: 'any', number: 1, dataDurability: 'preferred' } },
      imageName: 'reg/cnpg/postgresql:16',
      storage: { size: String(5 << 20), storageClass: 'fast' },
      resources: { requests: { 'ephemeral-storage': '64Mi' }, limits: { 'ephemeral-storage': '256Mi' } },
      bootstrap: { initdb: { database: 'orders', owner: 'app', secret: { name: 'db-orders-credentials' } } },
      inheritedMetadata: { labels: { 'svc.dev/database': 'orders', 'app.kubernetes.io/managed-by': 'svc-controllers' } },
    });
    assert.deepEqual(cnpgService(db).spec?.selector, { 'cnpg.io/cluster': 'db-orders', 'cnpg.io/instanceRole': 'primary' });
    const policy = cnpgPolicy(db, onCnpg, [{ metadata: { name: 'shop' }, spec: { database: 'orders' } } as App]);
    assert.deepEqual((policy.spec!.ingress![0] as unknown as { from: unknown[] }).from[0], {
      podSelector: { matchExpressions: [{ key: 'svc.dev/app', operator: 'In', values: ['shop'] }] },
    });
    // The operator's pods and the Cluster's own instances (a standby streams from the primary), on
    // PostgreSQL's and the instance manager's ports; the nodes (the kubelet's probes) on the latter.
    type Rule = { from: unknown[]; ports: unknown };
    const rules = policy.spec!.ingress! as unknown as Rule[];
    assert.deepEqual(rules.at(-2), {
      from: [
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'cnpg-system' } },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'cloudnative-pg' } },
        },
        { podSelector: { matchLabels: { 'cnpg.io/cluster': 'db-orders' } } },
      ],
      ports: [
        { protocol: 'TCP', port: 5432 },
        { protocol: 'TCP', port: 8000 },
      ],
    });
    assert.deepEqual(rules.at(-1), {
      from: settings.platformCidrs.map((cidr) => ({ ipBlock: { cidr } })),
      ports: [{ protocol: 'TCP', port: 8000 }],
    });
    // No node addresses configured: no probe rule (a rule without peers would admit every pod).
    const open = cnpgPolicy(db, { ...onCnpg, platformCidrs: [] }, []).spec!.ingress! as unknown as Rule[];
    assert.ok(
      open.every((r) => r.from.length > 0),
      JSON.stringify(open),
    );
    assert.equal(open.length, rules.length - 1);
    // One instance: no standby to wait for.
    const single = cnpgCluster(db, { ...onCnpg, cnpg: { image: undefined, operatorNamespace: 'cnpg-system' } }).spec!;
    assert.deepEqual([single.instances, single.postgresql], [1, undefined]);
    const healthy = { status: { phase: 'Cluster in healthy state', readyInstances: 1, conditions: [{ type: 'Ready', status: 'True' }] } };
    assert.deepEqual(cnpgStatus(db, healthy, service, 'shop').status, {
      secretName: 'db-orders-credentials',
      port: 5432,
      databaseName: 'orders',
      host: '10.96.0.7',
      attachedTo: 'shop',
      phase: 'Ready',
    });
    assert.equal(cnpgStatus(db, healthy, undefined, undefined).status.phase, 'Pending', 'not Ready before its Service has an address');
    assert.equal(cnpgStatus(db, undefined, service, undefined).ready.message, 'CloudNativePG: the Cluster is being created');
    assert.equal(
      cnpgStatus(db, { status: {} }, service, undefined).ready.message,
      'CloudNativePG: waiting for the operator (is CloudNativePG installed and running?)',
    );
    assert.equal(
      cnpgStatus(db, { status: { phase: 'Setting up primary', phaseReason: 'Creating primary instance db-orders-1' } }, service, undefined)
        .ready.message,
      'CloudNativePG: Setting up primary: Creating primary instance db-orders-1',
    );
  });

  it('on CloudNativePG: restores with one Job once the Cluster is Ready, in one transaction, and never again once done', () => {
    const key = Buffer.alloc(32, 7);
    const onCnpg: DatabaseSettings = {
      ...settings,
      provider: 'cloudnative-pg',
      backups: backupsWith(key),
    };
    const now = new Date('2026-11-25T12:00:00Z');
    const digest = `sha256:${'b'.repeat(64)}`;
    const restored: Database = { ...db, spec: { ...db.spec, provider: 'cloudnative-pg', restoreFrom: { backup: 'bk-1', digest } } };
    assert.deepEqual(cnpgRestore(db, onCnpg, true, '10.96.0.7', [], now), { state: 'none' }, 'nothing to load without restoreFrom');
    assert.deepEqual(
      cnpgRestore(restored, onCnpg, false, '10.96.0.7', [], now),
      { state: 'waiting' },
      'no Job before the Cluster is Ready',
    );
    const started = cnpgRestore(restored, onCnpg, true, '10.96.0.7', [], now);
    assert.equal(started.state, 'waiting');
    const job = (started as { job: k8s.V1Job }).job;
    assert.equal(job.metadata?.name, 'db-orders-restore');
    assert.equal(job.spec?.template.metadata?.labels?.['svc.dev/backup-of'], 'orders', "under the backup Jobs' policy");
    const c = job.spec.template.spec!.containers[0]!;
    const env = Object.fromEntries((c.env ?? []).filter((e) => e.value).map((e) => [e.name, e.value]));
    assert.deepEqual(
      [c.args, c.image, env.SVC_RESTORE_HOST, env.SVC_RESTORE_URL],
      [['restore'], 'reg/svc/postgres:1', '10.96.0.7', `http://10.244.0.1:8080/artifacts/${digest}`],
    );
    assert.deepEqual(checkArtifactCredential(key, digest, env.SVC_RESTORE_TOKEN, now), { ok: true });
    assert.equal(checkArtifactCredential(key, `sha256:${'c'.repeat(64)}`, env.SVC_RESTORE_TOKEN, now).ok, false, 'it opens this dump only');
    assert.deepEqual(
      c.env?.filter((e) => e.valueFrom).map((e) => e.valueFrom?.secretKeyRef?.key),
      ['username', 'password', 'database'],
      'the tenant, not a superuser',
    );
    const withStatus = (type: string): k8s.V1Job => ({
      ...job,
      status: {
        conditions: [{ type, status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }],
      },
    });
    assert.deepEqual(cnpgRestore(restored, onCnpg, true, '10.96.0.7', [job], now), { state: 'running' });
    assert.deepEqual(cnpgRestore(restored, onCnpg, true, '10.96.0.7', [withStatus('Complete')], now), { state: 'done' });
    assert.deepEqual(cnpgRestore(restored, onCnpg, true, '10.96.0.7', [withStatus('Failed')], now), {
      state: 'failed',
      reason: 'BackoffLimitExceeded: Job has reached the specified backoff limit',
    });
    const done: Database = {
      ...restored,
      status: {
        conditions: [{ type: 'Restored', status: 'True', reason: 'Restored', message: '', lastTransitionTime: now.toISOString() }],
      },
    };
    assert.deepEqual(cnpgRestore(done, onCnpg, true, '10.96.0.7', [], now), { state: 'done' }, 'its Job gone, not run again');
    const healthy = { status: { phase: 'Cluster in healthy state', readyInstances: 2, conditions: [{ type: 'Ready', status: 'True' }] } };
    const foreign: k8s.V1Job = {
      ...withStatus('Complete'),
      metadata: { ...job.metadata, ownerReferences: [{ ...job.metadata.ownerReferences![0]!, uid: 'u-deleted' }] },
    };
    assert.equal(
      cnpgRestore(restored, onCnpg, true, '10.96.0.7', [foreign], now).state,
      'waiting',
      "a deleted Database's Job of the same name says nothing about this one",
    );

    // The whole plan: while the dump goes in, the app is kept out, the backup Jobs' policy (the
    // restore's too) is there, and no backup is scheduled or started; once in, all of it.
    const shop = { metadata: { name: 'shop' }, spec: { database: 'orders' } } as App;
    const asked: Database = { ...restored, metadata: { ...restored.metadata, annotations: { 'svc.dev/backup-requested': 'now-1' } } };
    const observed = { attachedApps: [shop], service, backupJobs: [job], cluster: healthy };
    const during = cnpgPlan(asked, observed, onCnpg, now);
    const admitsShop = (p: k8s.V1NetworkPolicy) => JSON.stringify(p.spec!.ingress).includes('"shop"');
    assert.equal(admitsShop(during.policy), false, 'the app is not let in while restoring');
    assert.ok(during.backupPolicy, "the backup Jobs' policy is applied for the restore");
    assert.deepEqual([during.backup, during.restoreJob, during.status.phase, during.conditions], [undefined, undefined, 'Pending', []]);
    const after = cnpgPlan(asked, { ...observed, backupJobs: [withStatus('Complete')] }, onCnpg, now);
    assert.equal(admitsShop(after.policy), true);
    assert.ok(after.backup?.cronJob && after.backup.requested, 'the nightly backup and the one asked for');
    assert.deepEqual([after.status.phase, after.conditions.map((c) => c.type)], ['Ready', ['Restored']]);
    const first = cnpgPlan(restored, { attachedApps: [], service, backupJobs: [], cluster: healthy }, onCnpg, now);
    assert.equal(first.restoreJob?.metadata?.name, 'db-orders-restore', 'the Job, once the Cluster is Ready');

    assert.deepEqual(restoredConditions(restored, { state: 'done' }), [
      { type: 'Restored', ok: true, reason: 'Restored', message: 'backup bk-1 loaded' },
    ]);
    assert.deepEqual(restoredConditions(restored, { state: 'running' }), [], 'not before the dump is in');
    assert.deepEqual(restoredConditions(db, { state: 'none' }), [], 'nor without a restore');
    assert.equal(cnpgRestore(restored, settings, true, '10.96.0.7', [], now).state, 'failed', 'no backup settings: said, not waited for');

    const loading = cnpgStatus(restored, healthy, service, 'shop', { state: 'running' });
    assert.deepEqual(
      [loading.status.phase, loading.ready.reason, loading.ready.message],
      ['Pending', 'Restoring', 'CloudNativePG: ready; loading backup bk-1 into it'],
    );
    const failed = cnpgStatus(restored, healthy, service, 'shop', { state: 'failed', reason: 'BackoffLimitExceeded' });
    assert.deepEqual([failed.status.phase, failed.ready.message], ['Failed', 'restoring backup bk-1 failed: BackoffLimitExceeded']);
    assert.equal(cnpgStatus(restored, healthy, service, 'shop', { state: 'done' }).status.phase, 'Ready');
  });

  it("starts a branch as a copy of its source once the source has an address, with the source's data and database name and credentials of its own", () => {
    const branch: Database = {
      ...db,
      metadata: { ...db.metadata, name: 'orders-1a2b3c', uid: 'u2' },
      spec: { ...db.spec, branchOf: 'orders' },
    };
    const waiting = plan(branch, { pod: undefined, claim: undefined, service: undefined, attachedApps: [] }, settings);
    assert.equal(waiting.createPod, undefined, 'no server before its source can be copied');
    assert.equal(waiting.ready.message, 'waiting for database orders, which it copies');
    const p = plan(branch, { pod: undefined, claim: undefined, service: undefined, attachedApps: [], sourceHost: '10.96.0.7' }, settings);
    const server = p.createPod!.spec!.containers[0]!;
    assert.equal(server.env!.find((e) => e.name === 'SVC_BRANCH_HOST')?.value, '10.96.0.7', 'the server copies its source first');
    const refs = Object.fromEntries(server.env!.filter((e) => e.valueFrom).map((e) => [e.name, e.valueFrom!.secretKeyRef]));
    assert.deepEqual(
      [refs.PGUSER?.name, refs.PGPASSWORD?.name, refs.SVC_REPLICATION_PASSWORD?.name],
      ['db-orders-1a2b3c-credentials', 'db-orders-1a2b3c-credentials', 'db-orders-1a2b3c-credentials'],
      "its own role's passwords",
    );
    assert.deepEqual(
      refs.SVC_BRANCH_PASSWORD,
      { name: 'db-orders-credentials', key: 'replication-password', optional: true },
      "of the source's, only the replication role's",
    );
    assert.equal(
      server.env!.find((e) => e.name === 'SVC_BRANCH_LOGICAL'),
      undefined,
      'a physical copy of a server of our own',
    );
    // Of a CloudNativePG Cluster (no replication role of ours there): a logical copy, as the source's tenant.
    const ofCluster = plan(
      branch,
      { pod: undefined, claim: undefined, service: undefined, attachedApps: [], sourceHost: '10.96.0.7', sourceProvider: 'cloudnative-pg' },
      settings,
    ).createPod!.spec!.containers[0]!.env!;
    assert.equal(ofCluster.find((e) => e.name === 'SVC_BRANCH_LOGICAL')?.value, '1');
    assert.deepEqual(ofCluster.find((e) => e.name === 'SVC_BRANCH_PASSWORD')?.valueFrom?.secretKeyRef, {
      name: 'db-orders-credentials',
      key: 'password',
      optional: true,
    });
    assert.equal(p.createPod!.spec!.initContainers, undefined, 'in its own container: no other to start');
    assert.deepEqual(
      p.policy.spec!.egress,
      [{ to: [{ podSelector: { matchLabels: { 'svc.dev/database': 'orders' } } }], ports: [{ protocol: 'TCP', port: 5432 }] }],
      'out to its source only',
    );
    assert.equal(p.claim.metadata!.labels!['svc.dev/branch-of'], 'orders');
    assert.equal(p.status.databaseName, 'orders');
    const copying = plan(
      branch,
      {
        pod: pod({
          containerStatuses: [{ name: 'postgres', image: '', imageID: '', ready: false, restartCount: 0, state: { running: {} } }],
        }),
        claim,
        service,
        attachedApps: [],
        sourceHost: '10.96.0.7',
      },
      settings,
    );
    assert.equal(copying.ready.message, 'copying database orders, then starting from the copy');
    assert.equal(copying.policy.spec!.egress!.length, 1, 'out to its source while it copies');
    const preview = { metadata: { name: 'shop--feat' }, spec: { database: 'orders-1a2b3c' } } as App;
    const up = plan(
      branch,
      { pod: pod({ conditions: [{ type: 'Ready', status: 'True' }] }), claim, service, attachedApps: [preview], sourceHost: '10.96.0.7' },
      settings,
    );
    assert.deepEqual(up.policy.spec!.egress, [], 'no way back to its source once it is up');
    assert.deepEqual(
      (up.policy.spec!.ingress![0] as unknown as { from: unknown[] }).from.slice(0, 2),
      [
        { podSelector: { matchExpressions: [{ key: 'svc.dev/app', operator: 'In', values: ['shop--feat'] }] } },
        {
          podSelector: {
            matchLabels: { 'svc.dev/branch-of': 'orders-1a2b3c' },
            matchExpressions: [{ key: 'svc.dev/database', operator: 'Exists' }],
          },
        },
      ],
      "in: the preview's machines and its own branches",
    );
    // Its source lets its branches in, and neither the branch's app nor other databases' servers.
    const source = plan(
      db,
      {
        pod: pod({ conditions: [{ type: 'Ready', status: 'True' }] }),
        claim,
        service,
        attachedApps: [{ metadata: { name: 'shop' }, spec: { database: 'orders' } } as App],
      },
      settings,
    );
    const from = (source.policy.spec!.ingress![0] as unknown as { from: Array<{ podSelector?: k8s.V1LabelSelector }> }).from;
    assert.ok(!JSON.stringify(from).includes('shop--feat'));
    assert.ok(
      !from.some((p) => p.podSelector?.matchExpressions?.some((e) => e.operator === 'Exists' && !p.podSelector?.matchLabels)),
      'no selector of a whole kind of pod',
    );
  });
});
