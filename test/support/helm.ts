// The helm of hack/build-helm.sh (SVC_HELM_BIN, set by hack/test.sh), against the test cluster.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../lib/paths.js';

const execFileP = promisify(execFile);

export const chartDir = path.join(repoRoot, 'charts/svc-platform');
/** The values the tests install and render the chart with (the local platform's). */
export const localValues = path.join(chartDir, 'ci/local-values.yaml');

/**
 * `helm template` of the chart (release `release` in `namespace`) for the local cluster's
 * Kubernetes (hack/build-k8s.sh's release; helm assumes v1.20 without a cluster, which the chart's
 * kubeVersion refuses).
 */
export function renderChart(release: string, namespace: string, ...args: string[]): Promise<string> {
  return helm('template', release, chartDir, '-n', namespace, '--kube-version', process.env.K8S_VERSION ?? 'v1.36.3', ...args);
}

/** Runs helm; resolves with stdout, rejects with its stderr as the message. */
export async function helm(...args: string[]): Promise<string> {
  const bin = process.env.SVC_HELM_BIN;
  if (!bin) throw new Error('SVC_HELM_BIN is not set: run the integration tests through `make test`');
  try {
    return (await execFileP(path.join(bin, 'helm'), args, { env: process.env, maxBuffer: 64 << 20 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(e.stderr || e.message, { cause: err });
  }
}
