// Attack: one account exhausting the host's process IDs (issue 30: ~17,600 PIDs for one account,
// 16 machines x 1,024 plus 10 sandboxes x 128, on a host whose pid_max was 32,768; every other
// account's fork then fails). What bounds it, read from the running parts rather than from our
// own files: the host's pid_max, each node's kubelet configuration (its per-pod PID limit and its
// eviction on PID pressure) as the kubelet reports it, and a real account namespace's quota of pods.
// An account at all its limits must hold a small share of the host's IDs.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startTestApi, type TestApi } from '../support/api.js';
import { kubeConfig } from '../support/kube.js';
import { eventually } from '../support/wait.js';

interface KubeletConfig {
  podPidsLimit?: number;
  evictionHard?: Record<string, string>;
}

describe("security: one account cannot exhaust the host's process IDs", () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => api?.close());

  it('bounds an account at every limit to under 5% of pid_max, and the kubelets evict on PID pressure', async () => {
    const pidMax = Number((await readFile('/proc/sys/kernel/pid_max', 'utf8')).trim());
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    // The account controller makes the quota a moment after the account.
    const quota = await eventually(
      "the account's quota",
      () => core.readNamespacedResourceQuota({ name: 'svc-account', namespace: api.account.namespace }).catch(() => undefined),
      { timeoutMs: 60_000 },
    );
    const pods = Number(quota.spec?.hard?.pods);
    assert.ok(pods > 0 && pods <= 100, `the account's quota holds its pods (${pods})`);
    const sandboxes = api.deps.config.sandboxes.maxOpenPerAccount;
    const nodes = (await core.listNode()).items.map((n) => n.metadata!.name!);
    assert.ok(nodes.length >= 2);
    for (const node of nodes) {
      const raw = (await core.connectGetNodeProxyWithPath({ name: node, path: 'configz' })) as unknown;
      const config = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { kubeletconfig: KubeletConfig };
      const perPod = config.kubeletconfig.podPidsLimit ?? -1;
      assert.ok(perPod > 0 && perPod <= 4096, `${node}: every pod has a PID limit (${perPod})`);
      const worst = pods * perPod + sandboxes * 128;
      assert.ok(worst < pidMax * 0.05, `${node}: an account at its limits holds ${worst} of ${pidMax} PIDs`);
      assert.ok(
        config.kubeletconfig.evictionHard?.['pid.available'],
        `${node}: evicts on PID pressure (${JSON.stringify(config.kubeletconfig.evictionHard)})`,
      );
    }
  });
});
