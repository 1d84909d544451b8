// Attack: one account filling the disk the host shares with etcd, PostgreSQL and the registry
// (issue 30 finding 3: a 16 MiB compose volume took 64 MiB, `df` inside showed the host's disk).
// On the real nodes and provisioner: a machine writing 64 MiB into its 16 MiB volume gets ENOSPC,
// sees its volume's size in `df`, and the host holds no more than the volume's size for it; a pod
// writing past its ephemeral-storage limit is evicted by its kubelet, and machines carry the limit.
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Volume } from '../../api/repositories/volumes.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { getFromApp } from '../support/app-traffic.js';
import { images } from '../support/images.js';
import { eventually } from '../support/wait.js';

const MiB = 1024 ** 2;

/** A service that tries to write 64 MiB into its 16 MiB volume and serves what df and dd said. */
const filler = [
  'services:',
  '  web:',
  `    image: ${images.busybox}`,
  '    command: ["sh", "-c", "df -k /data > /tmp/df; dd if=/dev/zero of=/data/fill bs=1M count=64 2> /tmp/dd; echo rc=$$? >> /tmp/dd; exec httpd -f -p 8080 -h /tmp"]',
  '    ports: ["8080"]',
  '    volumes: ["data:/data"]',
  'volumes:',
  '  data: {}',
  'x-svc:',
  '  volumes:',
  '    data:',
  '      size: 16Mi',
].join('\n');

describe("security: one account cannot fill the host's disk", () => {
  let api: TestApi;
  let ns: string;
  const volumes = async () => (await expectJson<{ volumes: Volume[] }>(await api.request('GET', '/api/volumes'), 200)).volumes;

  before(async () => {
    api = await startTestApi();
    ns = api.account.namespace;
  });
  after(async () => api?.close());

  it('a 16 MiB volume holds 16 MiB: writing 64 MiB fails with ENOSPC inside, df shows the volume, the host holds its size', async () => {
    await expectJson(await api.request('POST', '/api/apps', { body: { name: 'disk-fill' } }), 201);
    const d = await expectJson<{ id: string }>(await api.request('POST', '/api/apps/disk-fill/deploy', { body: { compose: filler } }), 202);
    await eventually(
      `deploy ${d.id} live`,
      async () => (await expectJson<{ status: string }>(await api.request('GET', `/api/deploys/${d.id}`), 200)).status === 'live',
      { timeoutMs: 120_000 },
    );

    const dd = await eventually('dd finished', async () => {
      const r = await getFromApp(ns, 'disk-fill', '/dd');
      return r?.status === 200 && r.body.includes('rc=') ? r.body : undefined;
    });
    assert.match(dd, /No space left on device/, dd);
    assert.match(dd, /rc=1/, 'dd failed');
    const df = (await getFromApp(ns, 'disk-fill', '/df'))!.body;
    const kib = Number(df.trim().split('\n').at(-1)!.trim().split(/\s+/)[1]);
    assert.ok(kib * 1024 <= 16 * MiB && kib * 1024 >= 12 * MiB, `df inside shows the volume, not the host's disk: ${df}`);

    // What the API reports, from the volume's own filesystem, once measured after the fill. The
    // provisioner measures every volume of its nodes one after another every 10 s (local-volumes/
    // provisioner.ts), so under a full suite's load a round can take longer than a minute.
    let lastSeen: number | null | undefined;
    const v = await eventually(
      'the filled volume measured',
      async () => {
        const found = (await volumes()).find((x) => x.ref === 'disk-fill-data-m0');
        lastSeen = found?.used_bytes;
        return found && (found.used_bytes ?? 0) > 8 * MiB ? found : undefined;
      },
      { timeoutMs: 180_000, detail: () => `used_bytes last seen: ${String(lastSeen)}` },
    );
    assert.equal(v.size_bytes, 16 * MiB);
    assert.ok(v.used_bytes! <= v.size_bytes, `used_bytes ${v.used_bytes} within size_bytes ${v.size_bytes}`);

    // What the host's disk holds for it: the volume's image, never more than its size.
    const claim = await api.kube.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'disk-fill-data-m0' });
    const pv = await api.kube.core.readPersistentVolume({ name: claim.spec!.volumeName! });
    const image = await stat(`${pv.spec!.local!.path}.img`);
    assert.ok(image.blocks * 512 <= 16 * MiB, `the host holds ${image.blocks * 512} bytes for the volume`);
  });

  it("bounds a machine's node disk: machines carry an ephemeral-storage limit, and the kubelet evicts a pod past its own", async () => {
    const machine = await eventually(
      'the machine',
      async () => (await api.kube.core.listNamespacedPod({ namespace: ns, labelSelector: 'svc.dev/app=disk-fill' })).items[0],
    );
    for (const c of [...(machine.spec!.initContainers ?? []), ...machine.spec!.containers])
      assert.ok(c.resources?.limits?.['ephemeral-storage'], `${c.name}: an ephemeral-storage limit`);

    // A pod of the account's that writes 64 MiB into an emptyDir without a size of its own, under a
    // 32 MiB limit: only the kubelet's measure of the pod's local storage stops it.
    await api.kube.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'disk-fill-scratch' },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'fill',
              image: images.busybox,
              command: ['sh', '-c', 'dd if=/dev/zero of=/scratch/fill bs=1M count=64; sleep 600'],
              resources: { requests: { 'ephemeral-storage': '8Mi' }, limits: { 'ephemeral-storage': '32Mi' } },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true },
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
          volumes: [{ name: 'scratch', emptyDir: {} }],
        },
      },
    });
    // The kubelet measures volumes about once a minute (its volume stats period).
    const evicted = await eventually(
      'the pod evicted',
      async () => {
        const p = await api.kube.core.readNamespacedPod({ namespace: ns, name: 'disk-fill-scratch' });
        return p.status?.reason === 'Evicted' ? p : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 2_000 },
    );
    assert.equal(evicted.status?.phase, 'Failed');
    assert.match(evicted.status?.message ?? '', /ephemeral local storage usage exceeds the total limit of containers 32Mi/);
    await api.kube.core.deleteNamespacedPod({ namespace: ns, name: 'disk-fill-scratch', gracePeriodSeconds: 0 });
  });
});
