// BuildKit as the builder of full Dockerfiles (docs/decisions/0040-buildkit.md), on the local nodes:
// svc/buildkit (hack/images.sh) runs buildkitd as root in a user namespace of its own (hostUsers:
// false), with CAP_SYS_ADMIN added (namespaced), proc unmasked and the Localhost seccomp profile
// hack/nodes.sh installs (moby's default with the keyring calls and pivot_root). It builds a
// multi-stage Dockerfile (a FROM scratch rootfs, a root RUN with a cache mount, a COPY --from into a
// final stage of USER 1000) into an OCI tarball, read here. The attacks: the same pod under the
// RuntimeDefault profile fails the RUN step at runc's session keyring (the profile is what makes it
// work); the RUN step can neither mount (no CAP_SYS_ADMIN in it) nor see buildkitd (a PID namespace
// of its own); buildkitd's uid 0 is a high uid on the host. The timings go to the output.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import * as tar from 'tar';
import { repoRoot } from '../../lib/paths.js';
import { kubeConfig, uniqueName } from '../support/kube.js';
import { scratchDir } from '../support/scratch.js';
import { assertOwnUserNamespace, hostUidsOfPod } from '../support/user-namespace.js';
import { eventually } from '../support/wait.js';

const state = process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc');
/** svc/buildkit of this checkout (hack/images.sh writes it to images.env as SVC_IMAGE_BUILDKIT). */
const image = (() => {
  const line = readFileSync(path.join(state, 'images.env'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('SVC_IMAGE_BUILDKIT='));
  if (!line) throw new Error('SVC_IMAGE_BUILDKIT is missing from images.env: run make images');
  return line.slice('SVC_IMAGE_BUILDKIT='.length);
})();
/** The profile's name under each kubelet's seccomp/ directory (hack/nodes.sh installs it there). */
const profileName = 'svc-buildkit.json';
const profileInRepo = readFileSync(path.join(repoRoot, 'hack/images/buildkit-seccomp.json'), 'utf8');

const dockerfile = `FROM scratch AS base
ADD rootfs.tar /
ENV PATH=/bin

FROM base AS step
USER 0
RUN --mount=type=cache,target=/cache mkdir -p /out /mnt && id > /cache/id && cp /cache/id /out/id && \\
    cat /proc/self/uid_map > /out/uid_map && grep -E '^(CapEff|Seccomp_filters):' /proc/self/status > /out/status && \\
    cat /proc/[0-9]*/comm > /out/procs; \\
    mount -t proc proc /mnt > /out/mount 2>&1; echo "exit $?" >> /out/mount

FROM base
COPY --from=step /out /out
USER 1000
`;

interface Run {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** kubectl of the test cluster with `input` on its stdin; stdout as bytes (an OCI tarball comes back this way). */
function kubectlIo(args: string[], input?: Buffer): Promise<Run> {
  const bin = path.join(process.env.SVC_K8S_BIN ?? '', 'kubectl');
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out), stderr: err }));
    child.stdin.end(input ?? Buffer.alloc(0));
  });
}

describe('BuildKit in a user-namespaced pod', { timeout: 180_000 }, () => {
  let core: k8s.CoreV1Api;
  const ns = uniqueName('buildkit');
  const timings: string[] = [];
  const exec = (pod: string, argv: string[], input?: Buffer) => kubectlIo(['exec', '-i', '-n', ns, pod, '--', ...argv], input);
  /** buildctl of `pod`'s buildkitd building the context put in /ctx. */
  const buildIn = (pod: string, ...more: string[]) =>
    exec(pod, [
      'buildctl',
      'build',
      '--progress=plain',
      '--frontend=dockerfile.v0',
      '--local=context=/ctx',
      '--local=dockerfile=/ctx',
      ...more,
    ]);
  const ms = (start: number) => `${Math.round(performance.now() - start)} ms`;

  const pod = (name: string, seccompProfile: k8s.V1SeccompProfile): k8s.V1Pod => ({
    metadata: { name, namespace: ns },
    spec: {
      hostUsers: false,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'buildkitd',
          image,
          securityContext: {
            runAsUser: 0,
            runAsGroup: 0,
            capabilities: { add: ['SYS_ADMIN'] },
            procMount: 'Unmasked',
            seccompProfile,
          },
          // Its snapshots on the node's disk, as overlayfs: on the container's own root it falls back to copying them whole.
          volumeMounts: [{ name: 'state', mountPath: '/var/lib/buildkit' }],
        },
      ],
      volumes: [{ name: 'state', emptyDir: {} }],
    },
  });
  const running = (name: string) =>
    eventually(
      `pod ${name} to run`,
      async () => {
        const p = await core.readNamespacedPod({ name, namespace: ns });
        return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      {
        timeoutMs: 60_000,
        detail: async () => JSON.stringify((await core.readNamespacedPod({ name, namespace: ns })).status?.containerStatuses?.[0]?.state),
      },
    );
  const buildkitdReady = (name: string) =>
    eventually(`buildkitd of ${name} to answer`, async () => (await exec(name, ['buildctl', 'debug', 'workers'])).code === 0, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });

  let context: Buffer;
  let bk: k8s.V1Pod;
  let build: Run;
  let out: string;

  before(async () => {
    core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    // The context: the Dockerfile and a tiny rootfs of the host's static busybox.
    const dir = scratchDir('buildkit-');
    mkdirSync(path.join(dir, 'rootfs/bin'), { recursive: true });
    mkdirSync(path.join(dir, 'context'));
    copyFileSync('/bin/busybox', path.join(dir, 'rootfs/bin/busybox'));
    for (const applet of ['sh', 'id', 'cat', 'cp', 'mkdir', 'grep', 'mount']) {
      symlinkSync('busybox', path.join(dir, 'rootfs/bin', applet));
    }
    await tar.c({ file: path.join(dir, 'context/rootfs.tar'), cwd: path.join(dir, 'rootfs'), portable: true }, ['.']);
    writeFileSync(path.join(dir, 'context/Dockerfile'), dockerfile);
    await tar.c({ file: path.join(dir, 'context.tar'), cwd: path.join(dir, 'context'), portable: true }, ['.']);
    context = readFileSync(path.join(dir, 'context.tar'));
    out = path.join(dir, 'out');

    await core.createNamespace({
      body: { metadata: { name: ns, labels: { 'svc.dev/test': 'true', 'pod-security.kubernetes.io/enforce': 'privileged' } } },
    });
    await eventually(
      'the default ServiceAccount',
      async () => (await core.listNamespacedServiceAccount({ namespace: ns })).items.length > 0,
    );
    const started = performance.now();
    // The same pod twice: the profile of 0040, and RuntimeDefault (the attack below).
    await core.createNamespacedPod({ namespace: ns, body: pod('bk', { type: 'Localhost', localhostProfile: profileName }) });
    await core.createNamespacedPod({ namespace: ns, body: pod('bk-rd', { type: 'RuntimeDefault' }) });
    bk = await running('bk');
    timings.push(`pod running ${ms(started)}`);
    await buildkitdReady('bk');
    timings.push(`buildkitd answering ${ms(started)}`);
    const copied = performance.now();
    const put = await exec('bk', ['sh', '-c', 'mkdir -p /ctx && tar -x -C /ctx'], context);
    assert.equal(put.code, 0, put.stderr);
    timings.push(`context in (${context.length} bytes) ${ms(copied)}`);
    const building = performance.now();
    build = await buildIn('bk', '--output=type=oci,dest=-');
    timings.push(`multi-stage build ${ms(building)}`);
  });
  after(async () => {
    console.log(`# buildkit: ${timings.join('; ')}`);
    await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('runs on a node that has the profile of this checkout', () => {
    const node = bk.spec!.nodeName!;
    const installed = readFileSync(path.join(state, 'nodes', node, 'kubelet/seccomp', profileName), 'utf8');
    assert.equal(installed, profileInRepo, `the profile on ${node} is hack/images/buildkit-seccomp.json (hack/nodes.sh)`);
  });

  it('builds the multi-stage Dockerfile into an OCI image whose user is 1000', async () => {
    assert.equal(build.code, 0, build.stderr);
    mkdirSync(out);
    const file = `${out}.tar`;
    writeFileSync(file, build.stdout);
    await tar.x({ file, cwd: out });
    const blob = (digest: string) => readFileSync(path.join(out, 'blobs', ...digest.split(':')));
    const index = JSON.parse(readFileSync(path.join(out, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string }> };
    assert.equal(index.manifests.length, 1);
    const manifest = JSON.parse(blob(index.manifests[0]!.digest).toString()) as {
      config: { digest: string };
      layers: Array<{ digest: string; mediaType: string }>;
    };
    const config = JSON.parse(blob(manifest.config.digest).toString()) as { config: { User?: string; Env?: string[] } };
    assert.equal(config.config.User, '1000');
    assert.ok(config.config.Env?.includes('PATH=/bin'), JSON.stringify(config.config));
    assert.equal(manifest.layers.length, 2, 'the rootfs and the COPY --from');
    const last = path.join(out, 'last');
    mkdirSync(last);
    await tar.x({ file: path.join(out, 'blobs', ...manifest.layers[1]!.digest.split(':')), cwd: last });
    const made = (name: string) => readFileSync(path.join(last, 'out', name), 'utf8');

    // The RUN step ran as root: uid 0 of the pod's user namespace (BuildKit makes none of its own).
    assert.match(made('id'), /^uid=0\(?[a-z]*\)? gid=0/);
    assertOwnUserNamespace(made('uid_map'));
    // Confined: no CAP_SYS_ADMIN in the step (it cannot mount), BuildKit's seccomp filter on top of
    // the pod's, and a PID namespace of its own (buildkitd is not there to see or signal).
    assert.match(made('mount'), /permission denied|not permitted/i, made('mount'));
    assert.doesNotMatch(made('mount'), /exit 0/);
    const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(made('status'))![1]!}`);
    assert.equal(capEff & (1n << 21n), 0n, `no CAP_SYS_ADMIN in the step (${made('status').trim()})`);
    assert.ok(Number(/Seccomp_filters:\s*(\d+)/.exec(made('status'))![1]) >= 2, made('status'));
    const procs = made('procs').trim().split('\n');
    assert.ok(
      procs.includes('sh') && procs.every((p) => p === 'sh' || p === 'cat'),
      `only the step's own processes in its /proc: ${procs.join(',')}`,
    );
  });

  it("runs buildkitd as root of the pod's user namespace, a high uid on the host", async () => {
    const r = await exec('bk', ['sh', '-c', 'cat /proc/1/uid_map; grep ^Uid: /proc/1/status; cat /proc/1/comm']);
    assert.equal(r.code, 0, r.stderr);
    const [map, uid, comm] = r.stdout.toString().trim().split('\n');
    assertOwnUserNamespace(map!);
    assert.match(uid!, /^Uid:\s+0\s+0\s+0\s+0$/);
    assert.equal(comm, 'buildkitd');
    const outside = Number(map!.trim().split(/\s+/)[1]);
    assert.ok(outside > 0, map);
    const hostUids = await hostUidsOfPod(bk.metadata!.uid!);
    assert.ok(hostUids.length > 0, 'the pod has processes on this host');
    assert.ok(
      hostUids.every((u) => u >= outside && u < outside + 65536),
      `every process of the pod is a uid of its range on the host: ${hostUids.join(',')}`,
    );
  });

  it('fails the RUN step under RuntimeDefault: runc inside cannot make its session keyring', async () => {
    await running('bk-rd');
    await buildkitdReady('bk-rd');
    assert.equal((await exec('bk-rd', ['sh', '-c', 'mkdir -p /ctx && tar -x -C /ctx'], context)).code, 0);
    const started = performance.now();
    const r = await buildIn('bk-rd');
    timings.push(`the same build under RuntimeDefault failing ${ms(started)}`);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unable to join session keyring: unable to create session key: operation not permitted/);
  });
});
