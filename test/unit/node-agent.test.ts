import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { EnvError, expand, resolveEnv } from '../../node-agent/env.js';
import { argvFor, defaultImageRules, repositoryOf, ruleFor } from '../../node-agent/images.js';
import { IpPool } from '../../node-agent/ip-pool.js';
import { parseLogQuery, selectLines } from '../../node-agent/kubelet-server.js';
import { ContainerLog, readLog } from '../../node-agent/logs.js';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { podPhase, type ContainerRecord, type PodRecord } from '../../node-agent/status.js';

describe('node-agent images', () => {
  it('names repositories without registry, library, tag or digest', () => {
    assert.equal(repositoryOf('busybox'), 'busybox');
    assert.equal(repositoryOf('busybox:1.36'), 'busybox');
    assert.equal(repositoryOf('docker.io/library/busybox:1.36@sha256:abc'), 'busybox');
    assert.equal(repositoryOf('localhost:5000/svc/runtime:v1'), 'svc/runtime');
    assert.equal(repositoryOf('ghcr.io/svc/runtime'), 'svc/runtime');
    assert.equal(ruleFor('nginx:1.27', defaultImageRules), undefined);
  });

  it('builds argv by Kubernetes rules: command replaces ENTRYPOINT and drops CMD, args replace CMD', () => {
    const busybox = ruleFor('busybox', defaultImageRules)!;
    assert.deepEqual(argvFor(busybox, undefined, undefined), ['sh']);
    assert.deepEqual(argvFor(busybox, undefined, ['sh', '-c', 'echo hi']), ['sh', '-c', 'echo hi']);
    assert.deepEqual(argvFor(busybox, ['echo'], ['a', 'b']), ['echo', 'a', 'b']);
    const python = ruleFor('python:3.12', defaultImageRules)!;
    assert.deepEqual(argvFor(python, ['python', '-V'], undefined), ['python3', '-V']);
    assert.deepEqual(argvFor({ image: 'x', entrypoint: ['/entry'], cmd: ['serve'], aliases: {} }, undefined, ['debug']), ['/entry', 'debug']);
  });
});

describe('node-agent env', () => {
  const pod: k8s.V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u', labels: { tier: 'web' } }, spec: { nodeName: 'local-a', containers: [] } };
  const sources = {
    secret: async (_ns: string, name: string) => (name === 's' ? { token: 'T' } : undefined),
    configMap: async (_ns: string, name: string) => (name === 'c' ? { A: '1' } : undefined),
  };

  it('expands $(VAR) and keeps $$(VAR) literal', () => {
    assert.equal(expand('$(A)-$(B)-$$(A)-$(NOPE)', { A: 'x', B: 'y' }), 'x-y-$(A)-$(NOPE)');
  });

  it('applies envFrom, then env in order, then the bind convention', async () => {
    const env = await resolveEnv(
      pod,
      {
        name: 'c',
        ports: [{ containerPort: 9000 }],
        envFrom: [{ configMapRef: { name: 'c' } }],
        env: [
          { name: 'TIER', valueFrom: { fieldRef: { fieldPath: "metadata.labels['tier']" } } },
          { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 's', key: 'token' } } },
          { name: 'BOTH', value: '$(A)/$(TOKEN)' },
          { name: 'OPT', valueFrom: { secretKeyRef: { name: 'missing', key: 'k', optional: true } } },
        ],
      },
      '127.1.0.9',
      sources,
    );
    assert.deepEqual(env, { HOST: '127.1.0.9', PORT: '9000', POD_IP: '127.1.0.9', A: '1', TIER: 'web', TOKEN: 'T', BOTH: '1/T' });
  });

  it('names what is missing', async () => {
    await assert.rejects(resolveEnv(pod, { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'gone', key: 'k' } } }] }, 'ip', sources), (e: unknown) => e instanceof EnvError && /secret "gone" not found/.test(e.message));
    await assert.rejects(resolveEnv(pod, { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'nope' } } }] }, 'ip', sources), /key "nope" not found in secret "s"/);
  });
});

describe('node-agent pod phase', () => {
  const c = (state: ContainerRecord['state'], restartCount = 0): ContainerRecord => ({ name: 'c', image: 'busybox', state, restartCount, ready: false, started: true });
  const base = (containers: ContainerRecord[], restartPolicy: PodRecord['restartPolicy'], extra: Partial<PodRecord> = {}): PodRecord => ({
    podIP: '127.1.0.1',
    hostIP: '127.0.0.1',
    startTime: new Date(),
    restartPolicy,
    init: [],
    containers,
    initialized: true,
    finished: false,
    ...extra,
  });
  const done = (exitCode: number) => ({ kind: 'terminated' as const, exitCode, reason: exitCode ? 'Error' : 'Completed', finishedAt: new Date() });

  it('follows the kubelet rules', () => {
    assert.equal(podPhase(base([c({ kind: 'waiting', reason: 'ContainerCreating' })], 'Always')), 'Pending');
    assert.equal(podPhase(base([c({ kind: 'running', startedAt: new Date() })], 'Always')), 'Running');
    assert.equal(podPhase(base([c(done(0))], 'Never')), 'Succeeded');
    assert.equal(podPhase(base([c(done(2))], 'Never')), 'Failed');
    assert.equal(podPhase(base([c(done(0))], 'OnFailure')), 'Succeeded');
    assert.equal(podPhase(base([c(done(1))], 'OnFailure')), 'Running');
    assert.equal(podPhase(base([c({ kind: 'waiting', reason: 'CrashLoopBackOff' }, 2)], 'Always')), 'Running');
    assert.equal(podPhase(base([c(done(0))], 'Always', { initialized: false })), 'Pending');
    assert.equal(podPhase(base([c({ kind: 'waiting', reason: 'PodInitializing' })], 'Never', { initialized: false, init: [c(done(1))] })), 'Failed');
  });
});

describe('node-agent pod addresses and log queries', () => {
  it('gives each pod its own loopback address, keeps a pod’s previous one, and reuses released ones', () => {
    const pool = new IpPool('127.1');
    const a = pool.allocate('a');
    const b = pool.allocate('b');
    assert.match(a, /^127\.1\.\d+\.\d+$/);
    assert.notEqual(a, b);
    assert.equal(pool.allocate('a'), a);
    pool.release('a');
    assert.equal(pool.allocate('c', a), a);
    assert.notEqual(pool.allocate('d', b), b, 'an address in use is not handed out twice');
  });

  it('applies sinceTime and tailLines', () => {
    const lines = [1, 2, 3, 4].map((n) => ({ time: new Date(Date.UTC(2026, 0, 1, 0, 0, n)), stream: 'stdout' as const, text: `l${n}` }));
    const q = parseLogQuery(new URLSearchParams('tailLines=2&timestamps=true'));
    assert.deepEqual(selectLines(lines, q).map((l) => l.text), ['l3', 'l4']);
    const since = parseLogQuery(new URLSearchParams('sinceTime=2026-01-01T00:00:02Z'));
    assert.deepEqual(selectLines(lines, since).map((l) => l.text), ['l2', 'l3', 'l4']);
    assert.deepEqual(selectLines(lines, parseLogQuery(new URLSearchParams('tailLines=0'))), []);
  });
});

describe('node-agent container logs', () => {
  it('keeps lines in CRI format, caps the size with one rotation, and tells followers', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'svc-log-')), 'c', '0.log');
    const log = new ContainerLog(file, 4096);
    const seen: string[] = [];
    log.on('line', (l: { text: string }) => seen.push(l.text));
    for (let i = 0; i < 200; i++) log.write(i % 2 ? 'stderr' : 'stdout', Buffer.from(`line ${i} ${'x'.repeat(40)}\n`));
    log.write('stdout', Buffer.from('partial without newline'));
    await new Promise<void>((resolve) => {
      log.once('close', () => resolve());
      log.close();
    });
    assert.equal(seen.length, 201);
    assert.equal(seen[200], 'partial without newline');
    assert.ok(existsSync(`${file}.1`), 'rotated once');
    assert.ok(statSync(file).size <= 4096 && statSync(`${file}.1`).size <= 4096, 'each part within the cap');
    const lines = await readLog(file);
    assert.ok(lines.length > 0 && lines.length < 201, 'older lines past the cap are dropped');
    assert.equal(lines[lines.length - 1]!.text, 'partial without newline');
    assert.equal(lines.find((l) => l.text.startsWith('line 199'))?.stream, 'stderr');
  });
});
