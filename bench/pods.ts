// bench/pods: 200 pods brought to Running by the nodes' kubelets (containerd + runc), against the time the apiserver alone takes
// to accept the 200 creates, in the same run. Prints pods/s and create-to-Running p50/p99.
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../lib/kube/client.js';
import { inParallel, percentile } from './support.js';
import { images } from '../test/support/images.js';

const count = Number(process.env.BENCH_PODS ?? 200);
const concurrency = 20;

const kc = loadKubeConfig(process.env.KUBECONFIG);
const core = kc.makeApiClient(k8s.CoreV1Api);
const namespace = `bench-pods-${Date.now().toString(36)}`;

await core.createNamespace({ body: { metadata: { name: namespace } } });
try {
  // The default ServiceAccount must exist before pods are admitted.
  while (!(await core.listNamespacedServiceAccount({ namespace })).items.length) await new Promise((r) => setTimeout(r, 100));

  const created = new Map<string, number>();
  const running = new Map<string, number>();
  let allRunning: () => void = () => undefined;
  const done = new Promise<void>((r) => (allRunning = r));
  const watch = await new k8s.Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (_type: string, pod: k8s.V1Pod) => {
      const name = pod.metadata!.name!;
      if (pod.status?.phase === 'Running' && !running.has(name)) {
        running.set(name, performance.now());
        if (running.size === count) allRunning();
      }
    },
    () => undefined,
  );

  const start = performance.now();
  await inParallel(count, concurrency, async (i) => {
    const name = `p${i}`;
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name },
        spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: images.busybox, command: ['sleep', '600'] }] },
      },
    });
    created.set(name, performance.now());
  });
  const acceptedMs = performance.now() - start;
  const timeout = setTimeout(() => {
    console.error(`bench/pods: only ${running.size} of ${count} pods Running after 300 s`);
    process.exit(1);
  }, 300_000);
  await done;
  clearTimeout(timeout);
  const totalMs = Math.max(...running.values()) - start;
  watch.abort();

  const latencies = [...running.entries()].map(([name, t]) => t - created.get(name)!).sort((a, b) => a - b);
  console.log(`bench/pods: ${count} pods (busybox sleep), ${concurrency} creates in flight, same machine, same run`);
  console.log(
    `  apiserver accepted all creates   ${(acceptedMs / 1000).toFixed(2)} s   (${(count / (acceptedMs / 1000)).toFixed(1)} pods/s)`,
  );
  console.log(`  all Running via the kubelets     ${(totalMs / 1000).toFixed(2)} s   (${(count / (totalMs / 1000)).toFixed(1)} pods/s)`);
  console.log(
    `  create-to-Running                p50 ${percentile(latencies, 50).toFixed(0)} ms   p99 ${percentile(latencies, 99).toFixed(0)} ms`,
  );
  console.log(`  ratio Running time / accept time ${(totalMs / acceptedMs).toFixed(2)}`);
} finally {
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
}
