// Stopping node-agent leaves no process behind: a second agent with a node of its own runs a pod
// whose process tree ignores SIGTERM, and is stopped.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { repoRoot } from '../../lib/paths.js';
import { kubeConfig, testNamespace, uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';

const count = (pattern: string) => {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
};

describe('node-agent stop', () => {
  const node = uniqueName('stop-test');
  const marker = uniqueName('orphan-check');
  let core: k8s.CoreV1Api;
  let ns: Awaited<ReturnType<typeof testNamespace>>;
  let agent: ChildProcess;
  let output = '';

  before(async () => {
    core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    ns = await testNamespace(core, 'agentstop');
    execFileSync(path.join(repoRoot, 'hack/certs.sh'), { env: { ...process.env, SVC_NODES: node } });
    agent = spawn(process.execPath, [path.join(repoRoot, 'dist/node-agent/main.js')], {
      env: { ...process.env, SVC_NODES: node, SVC_NODE_KUBELET_PORT: '10290', SVC_NODE_POD_SUBNET: '10.245.0.0/16', SVC_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    agent.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(`node ${node} to be Ready`, async () => {
      const n = await core.readNode({ name: node }).catch(() => undefined);
      return n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    });
  });
  after(async () => {
    agent?.kill('SIGKILL');
    await core.deleteNode({ name: node }).catch(() => undefined);
    await ns?.dispose();
  });

  it('stops every pod process, children included, and exits 0', async () => {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 'long' },
        spec: {
          nodeName: node,
          terminationGracePeriodSeconds: 60,
          containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', `trap '' TERM; sleep 3001 & echo ${marker}; wait`] }],
        },
      },
    });
    await eventually('the pod processes', () => count(marker) >= 1 && count('sleep 3001') >= 1, { timeoutMs: 30_000 });
    const exited = new Promise<number | null>((r) => agent.once('exit', (code) => r(code)));
    agent.kill('SIGTERM');
    assert.equal(await exited, 0, output);
    assert.equal(count(marker), 0, 'the container process is gone');
    assert.equal(count('sleep 3001'), 0, 'its child is gone');
  });

  it('leaves its node to go NotReady through the node lifecycle controller', async () => {
    const ready = await eventually(
      `node ${node} to stop being Ready`,
      async () => {
        const c = (await core.readNode({ name: node })).status?.conditions?.find((x) => x.type === 'Ready');
        return c && c.status !== 'True' ? c : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    assert.equal(ready.status, 'Unknown');
    assert.equal(ready.reason, 'NodeStatusUnknown');
  });
});
