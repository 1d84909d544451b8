// The cloudnative-pg provider against CloudNativePG's real Cluster CRD (installed by hack/cnpg.sh
// from the operator's Go module): a Database made through the API on a platform configured for it
// becomes a postgresql.cnpg.io/v1 Cluster the apiserver accepts (server-side apply, validated by the
// CRD's schema and rules), bootstrapped with the API's credentials, reached through the same Service
// name; its status follows the Cluster's as an operator would write it (the test writes it: the
// operator does not run here); deleting the Database takes the Cluster with it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { mergePatch } from '../../lib/kube/client.js';
import { repoRoot } from '../../lib/paths.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/wait.js';

const cluster = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' };

describe('Databases on CloudNativePG (real CRDs)', { timeout: 300_000 }, () => {
  let api: TestApi;
  let ns: string;
  const json = expectJson;
  const database = async (name: string) =>
    (
      await json<{ databases: Array<{ name: string; phase: string; message: string | null; host: string | null }> }>(
        await api.request('GET', '/api/databases'),
        200,
      )
    ).databases.find((d) => d.name === name);

  before(async () => {
    const { stdout } = await promisify(execFile)(path.join(repoRoot, 'hack/cnpg.sh'), ['crds'], { timeout: 240_000 });
    console.log(`# ${stdout.trim()}`);
    api = await startTestApi({ env: { SVC_DATABASE_PROVIDER: 'cloudnative-pg' } });
    ns = api.account.namespace;
  });
  after(async () => {
    await api?.close();
  });

  it('writes a Cluster the real CRD accepts, maps its status, and deletes it with the Database', async () => {
    await json(await api.request('POST', '/api/databases', { body: { name: 'pg1', storage_bytes: 128 << 20 } }), 201);
    const custom = api.kube.kc.makeApiClient(k8s.CustomObjectsApi);
    const c = (await eventually('the Cluster', () =>
      custom.getNamespacedCustomObject({ ...cluster, namespace: ns, name: 'db-pg1' }).catch(() => undefined),
    )) as { metadata: { ownerReferences?: Array<{ kind: string; name: string }> }; spec: Record<string, unknown> };
    assert.equal(c.spec.instances, 1);
    assert.deepEqual(c.spec.bootstrap, { initdb: { database: 'pg1', owner: 'app', secret: { name: 'db-pg1-credentials' } } });
    // The CRD's own defaults were applied (resizeInUseVolumes): the real schema took it.
    assert.deepEqual(c.spec.storage, { size: String(128 << 20), resizeInUseVolumes: true });
    assert.deepEqual((c.spec.inheritedMetadata as { labels: Record<string, string> }).labels['svc.dev/database'], 'pg1');
    assert.deepEqual(
      c.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
      [['Database', 'pg1']],
    );
    // First "the Cluster is being created", until the controllers' cache of Clusters (started on
    // this first need) shows it; then it waits for an operator, which does not run here.
    const pending = await eventually('the Database waiting for the operator', async () =>
      (await database('pg1'))?.message?.includes('waiting for the operator') ? database('pg1') : undefined,
    );
    assert.equal(pending?.phase, 'Pending');

    // Attached apps reach it as any database: the same Service name, on the Cluster's primary.
    const service = await api.kube.core.readNamespacedService({ namespace: ns, name: 'db-pg1' });
    assert.deepEqual(service.spec?.selector, { 'cnpg.io/cluster': 'db-pg1', 'cnpg.io/instanceRole': 'primary' });

    // What the operator writes once its instance is up.
    const writeStatus = (status: Record<string, unknown>) =>
      custom.patchNamespacedCustomObjectStatus({ ...cluster, namespace: ns, name: 'db-pg1', body: { status } }, mergePatch);
    const now = new Date().toISOString();
    await writeStatus({
      phase: 'Cluster in healthy state',
      instances: 1,
      readyInstances: 1,
      currentPrimary: 'db-pg1-1',
      conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterIsReady', message: 'Cluster is Ready', lastTransitionTime: now }],
    });
    const ready = await eventually('the Database Ready', async () =>
      (await database('pg1'))?.phase === 'Ready' ? database('pg1') : undefined,
    );
    assert.equal(ready?.host, service.spec?.clusterIP);
    assert.match(ready?.message ?? '', /^CloudNativePG: Cluster in healthy state; PostgreSQL accepts connections at/);
    await writeStatus({
      phase: 'Failing over',
      phaseReason: 'primary db-pg1-1 is not ready',
      readyInstances: 0,
      conditions: [
        { type: 'Ready', status: 'False', reason: 'ClusterIsNotReady', message: 'Cluster is not Ready', lastTransitionTime: now },
      ],
    });
    const failing = await eventually('the Database no longer Ready', async () =>
      (await database('pg1'))?.phase === 'Pending' ? database('pg1') : undefined,
    );
    assert.equal(failing?.message, 'CloudNativePG: Failing over: primary db-pg1-1 is not ready');

    // A restore is CloudNativePG's own business.
    assert.match(
      (
        await json<{ error: string }>(
          await api.request('POST', '/api/databases', { body: { name: 'pg2', restore_from: { backup: 'bk-0' } } }),
          404,
        )
      ).error,
      /backup bk-0/,
    );

    await json(await api.request('DELETE', '/api/databases/pg1'), 204);
    await eventually('the Database gone', async () => !(await database('pg1')));
    await eventually(
      'the Cluster gone with it',
      async () => !(await custom.getNamespacedCustomObject({ ...cluster, namespace: ns, name: 'db-pg1' }).catch(() => undefined)),
      { timeoutMs: 60_000 },
    );
  });
});
