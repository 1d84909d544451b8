// The local platform's nodes (hack/nodes.sh: the upstream kubelet with containerd and runc each,
// kube-proxy, the policy agent, the local registry) against the local cluster: real images from
// the registry, the pod contract's status, restarts, termination, logs, exec, attach, port-forward,
// probes, volumes, limits and Services. `make test` starts them.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { kubeConfig, testNamespace, uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import path from 'node:path';
import { repoRoot } from '../../lib/paths.js';
import { images } from '../support/images.js';

const kubectlBin = () => path.join(process.env.SVC_K8S_BIN!, 'kubectl');

/** Processes whose command line contains the marker (containers' processes are the host's too). */
function processesWith(marker: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Exits 0 once something answers HTTP on the pod's own port 8000. */
const probeLocal8000 = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/debian_version', timeout=5)";

describe('nodes: kubelet + containerd', () => {
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let batch: k8s.BatchV1Api;
  let apps: k8s.AppsV1Api;
  let ns: Awaited<ReturnType<typeof testNamespace>>;

  before(async () => {
    kc = kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    batch = kc.makeApiClient(k8s.BatchV1Api);
    apps = kc.makeApiClient(k8s.AppsV1Api);
    ns = await testNamespace(core, 'nodes');
    await eventually(
      'the default ServiceAccount',
      async () => (await core.listNamespacedServiceAccount({ namespace: ns.name })).items.length > 0,
    );
  });
  after(async () => {
    await ns?.dispose();
  });

  const pod = (name: string, spec: Partial<k8s.V1PodSpec> & { containers: k8s.V1Container[] }): k8s.V1Pod => ({
    metadata: { name, namespace: ns.name },
    spec: { terminationGracePeriodSeconds: 5, ...spec },
  });
  const read = (name: string) => core.readNamespacedPod({ name, namespace: ns.name });
  const running = (name: string) =>
    eventually(`pod ${name} to run`, async () => {
      const p = await read(name);
      return p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.state?.running) ? p : undefined;
    });
  const logs = async (name: string) => await core.readNamespacedPodLog({ name, namespace: ns.name });

  it('registers two Ready nodes that renew their leases', async () => {
    const nodes = await core.listNode({ labelSelector: 'svc.dev/node' });
    const names = nodes.items.map((n) => n.metadata!.name!).sort();
    assert.ok(names.includes('local-a') && names.includes('local-b'), names.join(','));
    for (const name of ['local-a', 'local-b']) {
      const node = nodes.items.find((n) => n.metadata!.name === name)!;
      assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      assert.ok(Number(node.status?.allocatable?.pods) > 0);
      const lease = await kc.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ name, namespace: 'kube-node-lease' });
      assert.ok(Date.now() - new Date(lease.spec!.renewTime!).getTime() < 15_000, 'lease renewed within 15 s');
      assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\//);
      assert.match(node.status?.nodeInfo?.kubeletVersion ?? '', /^v1\.\d+\.\d+$/);
    }
    // Each node its own pod subnet, and its InternalIP the gateway of it.
    assert.notEqual(nodes.items[0]!.spec?.podCIDR, nodes.items[1]!.spec?.podCIDR);
  });

  it('runs a pod; kubectl logs -f shows a line printed after the stream started', async () => {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('streamer', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: images.busybox,
            command: ['sh', '-c', 'echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo after-stream-started; sleep 30'],
          },
        ],
      }),
    });
    const p = await running('streamer');
    // Its own network namespace, with an address of the pod subnet (not loopback, which EndpointSlices refuse).
    assert.match(p.status!.podIP!, /^10\.244\.\d+\.\d+$/);
    const kubectl = spawn(kubectlBin(), ['logs', '-f', '-n', ns.name, 'streamer'], { env: process.env });
    let out = '';
    kubectl.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await eventually('the stream to show the first line', () => out.includes('first'));
      // Only now does the container print its second line: kubectl exec creates the file it waits for.
      execFileSync(kubectlBin(), ['exec', '-n', ns.name, 'streamer', '--', 'touch', '/tmp/go'], { env: process.env });
      await eventually('the line written after the stream began', () => out.includes('after-stream-started'));
      assert.equal(out, 'first\nafter-stream-started\n');
      // The kubelet's Events reach the apiserver shortly after.
      await eventually('the Started event', async () => {
        const events = await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=streamer' });
        return events.items.find((e) => e.reason === 'Started' && e.source?.component === 'kubelet');
      });
    } finally {
      kubectl.kill();
    }
  });

  it('resolves env from values, secrets, config maps, field refs and envFrom', async () => {
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'creds' }, stringData: { password: 's3cret' } } });
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'settings' }, data: { MODE: 'fast', LEVEL: '3' } },
    });
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('envy', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: images.busybox,
            command: ['sh', '-c', 'echo "$PASSWORD|$MODE_FROM_KEY|$CFG_MODE|$CFG_LEVEL|$POD_NAME|$POD_NS|$MY_IP|$GREETING"'],
            ports: [{ containerPort: 8080 }],
            envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'settings' } }],
            env: [
              { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
              { name: 'MODE_FROM_KEY', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODE' } } },
              { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              { name: 'MY_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'GREETING', value: 'hi $(POD_NAME)' },
            ],
          },
        ],
      }),
    });
    const done = await eventually('pod envy to succeed', async () =>
      (await read('envy')).status?.phase === 'Succeeded' ? read('envy') : undefined,
    );
    const ip = done.status!.podIP!;
    assert.equal((await logs('envy')).trim(), `s3cret|fast|fast|3|envy|${ns.name}|${ip}|hi envy`);
  });

  it('completes a Job, and fails a failing Job with the container’s exit code', async () => {
    const job = (name: string, script: string): k8s.V1Job => ({
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: images.busybox, command: ['sh', '-c', script] }] },
        },
      },
    });
    await batch.createNamespacedJob({ namespace: ns.name, body: job('ok', 'echo done') });
    await batch.createNamespacedJob({ namespace: ns.name, body: job('broken', 'echo failing >&2; exit 3') });
    const condition = (name: string, type: string) =>
      eventually(
        `job ${name} ${type}`,
        async () => {
          const j = await batch.readNamespacedJob({ name, namespace: ns.name });
          return j.status?.conditions?.some((c) => c.type === type && c.status === 'True') ? j : undefined;
        },
        { timeoutMs: 60_000 },
      );
    const ok = await condition('ok', 'Complete');
    assert.equal(ok.status?.succeeded, 1);
    await condition('broken', 'Failed');
    const pods = await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'job-name=broken' });
    const terminated = pods.items[0]?.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.exitCode, 3);
    assert.equal(terminated?.reason, 'Error');
    assert.equal(pods.items[0]?.status?.phase, 'Failed');
  });

  it('spreads a Deployment of 3 replicas over both nodes, all running', async () => {
    const labels = { app: 'spread' };
    await apps.createNamespacedDeployment({
      namespace: ns.name,
      body: {
        metadata: { name: 'spread' },
        spec: {
          replicas: 3,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              terminationGracePeriodSeconds: 2,
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: 'kubernetes.io/hostname',
                  whenUnsatisfiable: 'DoNotSchedule',
                  labelSelector: { matchLabels: labels },
                },
              ],
              containers: [{ name: 'main', image: images.busybox, command: ['sh', '-c', 'sleep 300'] }],
            },
          },
        },
      },
    });
    const pods = await eventually(
      '3 running replicas',
      async () => {
        const list = await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=spread' });
        const run = list.items.filter((p) => p.status?.phase === 'Running');
        return run.length === 3 ? run : undefined;
      },
      { timeoutMs: 60_000 },
    );
    assert.deepEqual([...new Set(pods.map((p) => p.spec!.nodeName))].sort(), ['local-a', 'local-b']);
    assert.equal(new Set(pods.map((p) => p.status!.podIP)).size, 3, 'each pod has its own address');
  });

  it('restarts a container whose process is killed and counts the restart', async () => {
    const marker = uniqueName('restart-me');
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('restarter', {
        restartPolicy: 'Always',
        containers: [{ name: 'main', image: images.busybox, command: ['sh', '-c', `echo ${marker}; while :; do sleep 1; done`] }],
      }),
    });
    await running('restarter');
    // The container's own shell, a process of the host as every container's is.
    const shells = () =>
      processesWith(`echo ${marker}`).filter(
        (pid) => execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).trim() === 'sh',
      );
    const [pid] = shells();
    assert.ok(pid, 'the container process runs on the host');
    process.kill(pid, 'SIGKILL');
    const p = await eventually(
      'the restart',
      async () => {
        const p = await read('restarter');
        const s = p.status?.containerStatuses?.[0];
        return s?.restartCount === 1 && s.state?.running ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const last = p.status!.containerStatuses![0]!.lastState?.terminated;
    assert.equal(last?.exitCode, 137);
    await eventually('one container shell again', () => shells().length === 1);
    const previous = await core.readNamespacedPodLog({ name: 'restarter', namespace: ns.name, previous: true, timestamps: true });
    assert.match(previous, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z ${marker}\\n$`));
  });

  it('ends a deleted pod’s whole process tree within its grace period', async () => {
    const marker = uniqueName('tree');
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('stubborn', {
        terminationGracePeriodSeconds: 2,
        // Ignores SIGTERM and has children: only the SIGKILL after the grace period ends it.
        containers: [
          {
            name: 'main',
            image: images.busybox,
            command: ['sh', '-c', `trap '' TERM; sleep 301 & sleep 302 & echo ${marker}; wait; wait`],
          },
        ],
      }),
    });
    await running('stubborn');
    await eventually('three processes in the tree', () => processesWith(marker).length + processesWith('sleep 30[12]').length >= 3);
    const started = Date.now();
    await core.deleteNamespacedPod({ name: 'stubborn', namespace: ns.name });
    await eventually('the process tree to end', () => processesWith(marker).length === 0 && processesWith('sleep 30[12]').length === 0, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    const took = Date.now() - started;
    assert.ok(took >= 1500 && took < 4500, `ended after ${took} ms (grace 2 s, SIGTERM ignored)`);
    await eventually('the pod object to go', async () => {
      try {
        await read('stubborn');
        return false;
      } catch {
        return true;
      }
    });
  });

  it('leaves a pod whose image cannot be pulled Waiting, with the reason and the image named', async () => {
    const image = `${images.registry}/no/such-image:1`;
    await core.createNamespacedPod({ namespace: ns.name, body: pod('unrunnable', { containers: [{ name: 'web', image }] }) });
    const waiting = await eventually('the waiting reason', async () => {
      const w = (await read('unrunnable')).status?.containerStatuses?.[0]?.state?.waiting;
      return w && /ErrImagePull|ImagePullBackOff/.test(w.reason ?? '') ? w : undefined;
    });
    assert.match(waiting.message ?? '', /no\/such-image/);
    assert.equal((await read('unrunnable')).status?.phase, 'Pending');
    // kubectl describe shows it as an Event from the kubelet.
    const event = await eventually('the Warning event', async () => {
      const events = await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=unrunnable' });
      return events.items.find((e) => e.reason === 'Failed' && e.type === 'Warning');
    });
    assert.match(event.message ?? '', /no\/such-image/);
    assert.equal(event.source?.component, 'kubelet');
  });

  it('keeps a pod out of its Service’s ready endpoints until its readiness probe passes', async () => {
    const labels = { app: 'probed' };
    await core.createNamespacedService({
      namespace: ns.name,
      body: { metadata: { name: 'probed' }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8000 }] } },
    });
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 'probed', namespace: ns.name, labels },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'web',
              image: images.python,
              command: ['python3', '-m', 'http.server', '8000', '--bind', '0.0.0.0'],
              workingDir: '/tmp',
              ports: [{ name: 'http', containerPort: 8000 }],
              readinessProbe: {
                httpGet: { path: '/ready', port: 'http' as unknown as k8s.IntOrString },
                periodSeconds: 1,
                failureThreshold: 1,
              },
            },
          ],
        },
      },
    });
    const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    const endpoints = async () => {
      const slices = await discovery.listNamespacedEndpointSlice({
        namespace: ns.name,
        labelSelector: 'kubernetes.io/service-name=probed',
      });
      return slices.items.flatMap((s) => s.endpoints ?? []);
    };
    const p = await running('probed');
    const ip = p.status!.podIP!;
    // Serving, but /ready is 404: running and not ready.
    await eventually('the server to answer', async () => (await fetch(`http://${ip}:8000/`).catch(() => undefined))?.ok);
    // The kubelet's own word that the probe ran against the serving container and failed.
    await eventually(
      'a failed readiness probe reported',
      async () => {
        const events = await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=probed,reason=Unhealthy' });
        return events.items.some((e) => /Readiness probe failed/.test(e.message ?? ''));
      },
      { timeoutMs: 30_000 },
    );
    assert.equal((await read('probed')).status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    assert.ok(!(await endpoints()).some((e) => e.addresses.includes(ip) && e.conditions?.ready), 'not a ready endpoint');
    // The probe's file appears in the container's working directory: ready, and a ready endpoint.
    execFileSync(kubectlBin(), ['exec', '-n', ns.name, 'probed', '--', 'sh', '-c', 'echo ok > /tmp/ready'], { env: process.env });
    await eventually(
      'a ready endpoint at the pod address',
      async () => (await endpoints()).some((e) => e.addresses.includes(ip) && e.conditions?.ready),
      { timeoutMs: 20_000 },
    );
    assert.equal((await read('probed')).status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  });

  it('restarts a container that fails its liveness probe', async () => {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('unlively', {
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: images.busybox,
            command: ['sh', '-c', 'touch /tmp/alive; sleep 1; rm /tmp/alive; sleep 300'],
            livenessProbe: { exec: { command: ['test', '-e', '/tmp/alive'] }, periodSeconds: 1, failureThreshold: 2 },
          },
        ],
      }),
    });
    const p = await eventually(
      'a liveness restart',
      async () => {
        const p = await read('unlively');
        return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    // SIGKILL after the 1 s grace: the shell is the container's PID 1, which SIGTERM does not end
    // without a handler.
    assert.equal(p.status!.containerStatuses![0]!.lastState?.terminated?.exitCode, 137);
  });

  it('shows volumes at their mountPath: secret, config map items, downward API, emptyDir shared with an init container, the service-account token', async () => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'mounted' }, stringData: { password: 'mounted-s3cret' } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'files' }, data: { 'app.conf': 'mode=fast', ignored: 'x' } },
    });
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 'volumes', namespace: ns.name, labels: { tier: 'web' } },
        spec: {
          restartPolicy: 'Never',
          volumes: [
            { name: 'creds', secret: { secretName: 'mounted' } },
            { name: 'conf', configMap: { name: 'files', items: [{ key: 'app.conf', path: 'nested/app.conf' }] } },
            { name: 'meta', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
            { name: 'shared', emptyDir: {} },
          ],
          initContainers: [
            {
              name: 'prepare',
              image: images.busybox,
              command: ['sh', '-c', 'echo prepared > /work-shared/state'],
              volumeMounts: [{ name: 'shared', mountPath: '/work-shared' }],
            },
          ],
          containers: [
            {
              name: 'main',
              image: images.busybox,
              command: [
                'sh',
                '-c',
                'cat /etc/creds/password; echo; cat /config/nested/app.conf; echo; ls /config/nested; cat /meta/labels; echo; cat /work-shared/state; ' +
                  'test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-ok; (echo x > /etc/creds/new) 2>/dev/null || echo read-only-ok',
              ],
              volumeMounts: [
                { name: 'creds', mountPath: '/etc/creds', readOnly: true },
                { name: 'conf', mountPath: '/config' },
                { name: 'meta', mountPath: '/meta' },
                { name: 'shared', mountPath: '/work-shared' },
              ],
            },
          ],
        },
      },
    });
    await eventually('pod volumes to succeed', async () => (await read('volumes')).status?.phase === 'Succeeded', { timeoutMs: 30_000 });
    assert.equal(await logs('volumes'), 'mounted-s3cret\nmode=fast\napp.conf\ntier="web"\nprepared\ntoken-ok\nread-only-ok\n');
    for (const hostPath of ['/etc/creds', '/config', '/meta', '/work-shared']) {
      assert.equal(
        execFileSync('sh', ['-c', `test -e ${hostPath} && echo present || echo absent`], { encoding: 'utf8' }).trim(),
        'absent',
        `${hostPath} is not created on the host`,
      );
    }
  });

  it('runs a pod of the svc-sandbox RuntimeClass from its stricter base: read-only root, no capabilities', async () => {
    // The same pod twice, asking for nothing in particular: only the RuntimeClass differs.
    const script =
      'id -u; (touch /tmp/probe 2>/dev/null && echo "root: writable") || echo "root: read-only"; ' +
      'grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status | tr -s "\\t " " "';
    for (const [name, runtimeClassName] of [
      ['ordinary', undefined],
      ['sandboxed', 'svc-sandbox'],
    ] as const) {
      await core.createNamespacedPod({
        namespace: ns.name,
        body: pod(name, {
          restartPolicy: 'Never',
          ...(runtimeClassName ? { runtimeClassName } : {}),
          automountServiceAccountToken: false,
          securityContext: { runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{ name: 'main', image: images.busybox, command: ['sh', '-c', script] }],
        }),
      });
    }
    for (const name of ['ordinary', 'sandboxed'])
      await eventually(`pod ${name} to finish`, async () => (await read(name)).status?.phase === 'Succeeded', { timeoutMs: 30_000 });
    // No new privileges is the pod's to say (CRI sets it from allowPrivilegeEscalation, over the base;
    // PSA restricted makes account pods say it): this pod does not.
    assert.equal(await logs('sandboxed'), '1000\nroot: read-only\nCapEff: 0000000000000000\nNoNewPrivs: 0\nSeccomp: 2\n');
    assert.match(await logs('ordinary'), /^1000\nroot: writable\n/, 'the default runtime leaves the root as the pod asks');
  });

  it('runs kubectl exec, attach and port-forward against a pod', async () => {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('interactive', {
        containers: [
          {
            name: 'main',
            image: images.python,
            stdin: true,
            command: [
              'sh',
              '-c',
              'python3 -m http.server 8000 --bind 0.0.0.0 --directory /etc >/dev/null 2>&1 & while read line; do echo "got: $line"; done',
            ],
          },
        ],
      }),
    });
    await running('interactive');
    assert.equal(
      execFileSync(kubectlBin(), ['exec', '-n', ns.name, 'interactive', '--', 'cat', '/etc/debian_version'], {
        env: process.env,
        encoding: 'utf8',
      }).trim().length > 0,
      true,
    );
    // attach: a line on the container's stdin comes back on its stdout.
    const attach = spawn(kubectlBin(), ['attach', '-i', '-n', ns.name, 'interactive'], { env: process.env });
    try {
      attach.stdin.write('hello attach\n');
      await eventually('the attached container to echo', async () => (await logs('interactive')).includes('got: hello attach'), {
        timeoutMs: 20_000,
      });
    } finally {
      attach.kill();
    }
    // kubectl port-forward gives up on the first connection the pod refuses, and python may still be
    // starting on a loaded node: forward only once the server answers inside the pod.
    await eventually(
      'the server listening in the pod',
      () => {
        execFileSync(kubectlBin(), ['exec', '-n', ns.name, 'interactive', '--', 'python3', '-c', probeLocal8000], { env: process.env });
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const forward = spawn(kubectlBin(), ['port-forward', '-n', ns.name, 'pod/interactive', ':8000'], { env: process.env });
    try {
      let out = '';
      forward.stdout.on('data', (d: Buffer) => (out += d.toString()));
      forward.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const port = await eventually('the forwarded port', () => /127\.0\.0\.1:(\d+) ->/.exec(out)?.[1]);
      const body = await eventually('a page through the forward', async () => {
        if (forward.exitCode !== null) throw new Error(`kubectl port-forward exited: ${out.slice(-400)}`);
        const r = await fetch(`http://127.0.0.1:${port}/debian_version`);
        return r.ok ? r.text() : undefined;
      });
      assert.match(body, /^\d+/);
    } finally {
      forward.kill();
    }
  });

  it('serves a ClusterIP Service to pods through kube-proxy, by its name through the cluster DNS, on both nodes', async () => {
    const labels = { app: 'echo-svc' };
    await core.createNamespacedService({
      namespace: ns.name,
      body: { metadata: { name: 'echo-svc' }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8000 }] } },
    });
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 'echo-server', labels },
        spec: {
          nodeName: 'local-a',
          containers: [
            {
              name: 'main',
              image: images.python,
              workingDir: '/etc',
              command: ['python3', '-m', 'http.server', '8000'],
              readinessProbe: { tcpSocket: { port: 8000 as unknown as k8s.IntOrString }, periodSeconds: 1 },
            },
          ],
        },
      },
    });
    const svc = await core.readNamespacedService({ name: 'echo-svc', namespace: ns.name });
    const ip = svc.spec!.clusterIP!;
    await eventually('the server ready', async () =>
      (await read('echo-server')).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    for (const node of ['local-a', 'local-b']) {
      const name = `client-${node}`;
      await core.createNamespacedPod({
        namespace: ns.name,
        // kube-proxy programs a new Service's rules within seconds, not at once: the client tries for
        // up to 45 s, and reports the last error if it never gets through. The name as a pod of the
        // namespace writes it (the kubelet's search path) and whole: CoreDNS, through the kube-dns Service.
        body: pod(name, {
          nodeName: node,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'main',
              image: images.python,
              command: [
                'python3',
                '-c',
                `import socket, time, urllib.request\nfor i in range(45):\n    try:\n        assert socket.gethostbyname("echo-svc") == "${ip}", socket.gethostbyname("echo-svc")\n        print(urllib.request.urlopen("http://echo-svc.${ns.name}.svc.cluster.local/debian_version", timeout=3).status); break\n    except Exception as e:\n        err = e; time.sleep(1)\nelse:\n    raise SystemExit(f"no answer: {err!r}")`,
              ],
            },
          ],
        }),
      });
      const phase = await eventually(
        `${name} to finish`,
        async () => {
          const p = (await read(name)).status?.phase;
          return p === 'Succeeded' || p === 'Failed' ? p : undefined;
        },
        { timeoutMs: 90_000 },
      );
      assert.equal(phase, 'Succeeded', `from ${node}: ${await logs(name)}`);
      assert.equal(await logs(name), '200\n', `from ${node}`);
    }
  });

  it('enforces memory and CPU limits with cgroups', async () => {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('hungry', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: images.python,
            resources: { limits: { memory: '64Mi', cpu: '250m' } },
            command: ['python3', '-c', 'import time; time.sleep(1.5); b = b"x" * (400 * 1024 * 1024); print("allocated")'],
          },
        ],
      }),
    });
    const p = await running('hungry');
    const uid = p.metadata!.uid!;
    // The kubelet's cgroup of the pod, under its node's own cgroup root (v1: cpu hierarchy; v2: one tree).
    const quota = execFileSync(
      'sh',
      [
        '-c',
        `for f in $(find /sys/fs/cgroup/cpu/svc-${p.spec!.nodeName}/ /sys/fs/cgroup/svc-${p.spec!.nodeName}/ -path "*pod${uid}/*" \\( -name cpu.cfs_quota_us -o -name cpu.max \\) 2>/dev/null); do cat $f; done; true`,
      ],
      { encoding: 'utf8' },
    ).trim();
    assert.match(quota, /(^|\n)(25000|25000 100000)(\n|$)/, `a quarter of a CPU (found ${JSON.stringify(quota)})`);
    const done = await eventually(
      'the pod to fail',
      async () => ((await read('hungry')).status?.phase === 'Failed' ? read('hungry') : undefined),
      { timeoutMs: 30_000 },
    );
    const terminated = done.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(terminated.reason, 'OOMKilled');
    assert.equal(terminated.exitCode, 137);
    assert.ok(!(await logs('hungry')).includes('allocated'));
  });

  it('provisions a claim on the node of its first pod, keeps its data across pods, and deletes it with the claim', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns.name,
      body: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Mi' } } } },
    });
    const usePod = (name: string, script: string) =>
      core.createNamespacedPod({
        namespace: ns.name,
        body: pod(name, {
          restartPolicy: 'Never',
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          containers: [
            {
              name: 'main',
              image: images.busybox,
              command: ['sh', '-c', script],
              volumeMounts: [{ name: 'data', mountPath: '/var/lib/data' }],
            },
          ],
        }),
      });
    const succeeded = (name: string) =>
      eventually(`pod ${name} to succeed`, async () => ((await read(name)).status?.phase === 'Succeeded' ? read(name) : undefined), {
        timeoutMs: 60_000,
      });
    await usePod('writer', 'echo kept > /var/lib/data/file');
    const writer = await succeeded('writer');
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns.name, name: 'data' });
    assert.equal(claim.status?.phase, 'Bound');
    assert.equal(claim.spec?.storageClassName, 'svc-local');
    const pv = await core.readPersistentVolume({ name: claim.spec.volumeName! });
    assert.deepEqual(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]?.values, [writer.spec!.nodeName]);
    await usePod('reader', 'cat /var/lib/data/file');
    const reader = await succeeded('reader');
    assert.equal(reader.spec!.nodeName, writer.spec!.nodeName, 'a later pod follows its volume to the node');
    assert.equal(await logs('reader'), 'kept\n');
    await core.deleteNamespacedPod({ namespace: ns.name, name: 'writer' });
    await core.deleteNamespacedPod({ namespace: ns.name, name: 'reader' });
    await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns.name, name: 'data' });
    await eventually(
      'the volume and its directory to go',
      async () => {
        const gone = await core.readPersistentVolume({ name: pv.metadata!.name! }).then(
          () => false,
          () => true,
        );
        return (
          gone &&
          !execFileSync('sh', ['-c', `test -e ${pv.spec!.local!.path} && echo yes || echo no`], { encoding: 'utf8' }).includes('yes')
        );
      },
      { timeoutMs: 60_000 },
    );
  });

  it('runs the platform’s runtime image from this repository, serving a site at the pod address', async () => {
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'site' }, data: { 'index.html': '<h1>from the runtime</h1>' } },
    });
    await core.createNamespacedPod({
      namespace: ns.name,
      body: pod('runtime', {
        volumes: [{ name: 'site', configMap: { name: 'site' } }],
        containers: [
          {
            name: 'web',
            image: images.runtime,
            ports: [{ containerPort: 8080 }],
            env: [{ name: 'SVC_SITE_ROOT', value: '/srv/site' }],
            volumeMounts: [{ name: 'site', mountPath: '/srv/site' }],
            readinessProbe: { httpGet: { path: '/', port: 8080 as unknown as k8s.IntOrString }, periodSeconds: 1 },
          },
        ],
      }),
    });
    const p = await eventually(
      'the runtime pod to be ready',
      async () => {
        const p = await read('runtime');
        return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const res = await fetch(`http://${p.status!.podIP}:8080/`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '<h1>from the runtime</h1>');
  });

  it('starts the platform’s own images from the registry: each entry point loads all its code and dependencies', async () => {
    // A setting each component refuses at start: its configuration is read after every module it
    // imports has loaded, so this message proves the image holds the whole component (a missing
    // module fails earlier, with ERR_MODULE_NOT_FOUND).
    const components = [
      ['api', images.api],
      ['controllers', images.controllers],
      ['ingress-auth', images.ingressAuth],
    ] as const;
    for (const [component, image] of components) {
      await core.createNamespacedPod({
        namespace: ns.name,
        body: pod(`smoke-${component}`, {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          containers: [{ name: 'main', image, env: [{ name: 'SVC_LOG_LEVEL', value: 'loud' }] }],
        }),
      });
    }
    for (const [component, image] of components) {
      const done = await eventually(
        `smoke-${component} to end`,
        async () => {
          const p = await read(`smoke-${component}`);
          return p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded' ? p : undefined;
        },
        { timeoutMs: 60_000 },
      );
      const text = await logs(`smoke-${component}`);
      assert.match(text, new RegExp(`^${component}: invalid configuration:\\n  SVC_LOG_LEVEL: `), `${image}: ${text}`);
      assert.equal(done.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
      assert.match(image, /\/svc\/[a-z-]+:[0-9a-f]{12}-[0-9a-f]{16}$/, 'tagged with the commit and the content digest');
    }
  });

  it('answers on the kubelet API only the apiserver’s identity: anonymous is refused, another node is forbidden', async () => {
    const pki = path.join(process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc'), 'pki');
    const get = (port: number, who?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '10.244.0.1',
            port,
            path: '/pods',
            ca: readFileSync(path.join(pki, 'ca.crt')),
            ...(who ? { cert: readFileSync(path.join(pki, `${who}.crt`)), key: readFileSync(path.join(pki, `${who}.key`)) } : {}),
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.end();
      });
    assert.equal(await get(10250), 401, 'anonymous');
    assert.equal(await get(10250, 'node-local-b'), 403, 'local-b reading local-a (the Node authorizer, by webhook)');
    assert.equal(await get(10250, 'apiserver-kubelet-client'), 200, 'the apiserver');
  });
});
