// Test access to the local cluster that `make test` starts (KUBECONFIG points at its admin config).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { kubeStatus } from '../../lib/kube/client.js';
import { eventually } from './wait.js';

/** A kubeconfig that reaches no cluster: for fast tests that build clients and informers but never start them. */
export function offlineKubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
    currentContext: 'none',
  });
  return kc;
}

export function kubeConfig(): k8s.KubeConfig {
  const file = process.env.KUBECONFIG;
  if (!file) throw new Error('KUBECONFIG is not set: run the integration tests through `make test`');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** The HTTP status of a failed client call (the platform's own helper). */
export const statusOf = kubeStatus;

/** The apiserver's Status message of a failed client call. */
export function messageOf(err: unknown): string {
  if (err instanceof k8s.ApiException) {
    const body: unknown = typeof err.body === 'string' ? safeJson(err.body) : err.body;
    if (body && typeof body === 'object' && 'message' in body) return String(body.message);
    return String(err.body);
  }
  return err instanceof Error ? err.message : String(err);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Creates a namespace for one test file; `dispose` deletes it without waiting. */
export async function testNamespace(core: k8s.CoreV1Api, prefix = 'test'): Promise<{ name: string; dispose: () => Promise<void> }> {
  const name = uniqueName(prefix);
  await core.createNamespace({ body: { metadata: { name, labels: { 'svc.dev/test': 'true' } } } });
  return {
    name,
    dispose: async () => {
      await core.deleteNamespace({ name }).catch(() => undefined);
    },
  };
}

export async function waitNamespaceGone(core: k8s.CoreV1Api, name: string, timeoutMs = 90_000): Promise<void> {
  await eventually(
    `namespace ${name} to be deleted`,
    async () => {
      try {
        await core.readNamespace({ name });
        return false;
      } catch (err) {
        if (statusOf(err) === 404) return true;
        throw err;
      }
    },
    { timeoutMs, intervalMs: 500 },
  );
}

const execFileP = promisify(execFile);

/** Runs the cluster's own kubectl against the test cluster; returns stdout. */
export async function kubectl(...args: string[]): Promise<string> {
  const bin = process.env.SVC_K8S_BIN;
  if (!bin) throw new Error('SVC_K8S_BIN is not set: run the integration tests through `make test`');
  const { stdout } = await execFileP(path.join(bin, 'kubectl'), args, { env: process.env });
  return stdout;
}
