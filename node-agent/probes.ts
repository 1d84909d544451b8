// Container probes as the kubelet runs them: startup first (liveness and readiness wait for it),
// then readiness (drives the container's Ready, and so the pod's, and so its EndpointSlice
// membership) and liveness (a container failing it is restarted). httpGet, tcpSocket and exec.
import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type * as k8s from '@kubernetes/client-node';

export interface ProbeTarget {
  podIP: string;
  ports: k8s.V1ContainerPort[];
  env: Record<string, string>;
  cwd: string;
  /** Runs an exec probe's command inside the pod's network. */
  wrap(argv: string[]): string[];
}

function portOf(port: number | string | undefined, target: ProbeTarget): number {
  if (typeof port === 'number') return port;
  if (port !== undefined && /^\d+$/.test(port)) return Number(port);
  const named = target.ports.find((p) => p.name === port);
  if (!named) throw new Error(`probe names port "${port}", which the container does not declare`);
  return named.containerPort;
}

/** Runs one probe once: true on success. */
export async function runProbe(probe: k8s.V1Probe, target: ProbeTarget): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  if (probe.httpGet) {
    const g = probe.httpGet;
    const client = g.scheme === 'HTTPS' ? https : http;
    return new Promise((resolve) => {
      const req = client.request(
        {
          host: g.host ?? target.podIP,
          port: portOf(g.port as number | string, target),
          path: g.path ?? '/',
          method: 'GET',
          timeout: timeoutMs,
          headers: Object.fromEntries((g.httpHeaders ?? []).map((h) => [h.name, h.value])),
          rejectUnauthorized: false,
        },
        (res) => {
          res.resume();
          resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
  }
  if (probe.tcpSocket) {
    const t = probe.tcpSocket;
    return new Promise((resolve) => {
      const socket = net.connect({ host: t.host ?? target.podIP, port: portOf(t.port as number | string, target), timeout: timeoutMs });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('timeout', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(false));
    });
  }
  if (probe.exec?.command?.length) {
    const [cmd, ...args] = target.wrap(probe.exec.command);
    return new Promise((resolve) => {
      const child = spawn(cmd!, args, { env: target.env, cwd: target.cwd, stdio: 'ignore', timeout: timeoutMs, killSignal: 'SIGKILL' });
      child.once('error', () => resolve(false));
      child.once('exit', (code) => resolve(code === 0));
    });
  }
  throw new Error('unsupported probe handler (node-agent runs httpGet, tcpSocket and exec)');
}

export interface ProbeEvents {
  started(): void;
  ready(ready: boolean): void;
  /** Liveness or startup failed past its threshold: the container must be restarted. */
  unhealthy(reason: string): void;
}

/** Probes one running container until stop() is called. */
export class ContainerProber {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  private startedOk: boolean;

  constructor(
    private readonly container: k8s.V1Container,
    private readonly target: ProbeTarget,
    private readonly events: ProbeEvents,
  ) {
    this.startedOk = !container.startupProbe;
  }

  start(): void {
    if (this.container.startupProbe) this.loop('startup', this.container.startupProbe);
    else this.afterStartup();
    if (!this.container.readinessProbe) this.events.ready(this.startedOk);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
  }

  private afterStartup(): void {
    this.startedOk = true;
    this.events.started();
    if (this.container.readinessProbe) this.loop('readiness', this.container.readinessProbe);
    else this.events.ready(true);
    if (this.container.livenessProbe) this.loop('liveness', this.container.livenessProbe);
  }

  private loop(kind: 'startup' | 'readiness' | 'liveness', probe: k8s.V1Probe): void {
    const period = (probe.periodSeconds ?? 10) * 1000;
    const successThreshold = kind === 'readiness' ? (probe.successThreshold ?? 1) : 1;
    const failureThreshold = probe.failureThreshold ?? 3;
    let successes = 0;
    let failures = 0;
    const tick = async () => {
      if (this.stopped) return;
      const ok = await runProbe(probe, this.target).catch(() => false);
      if (this.stopped) return;
      if (ok) {
        successes += 1;
        failures = 0;
      } else {
        failures += 1;
        successes = 0;
      }
      if (kind === 'readiness') {
        if (ok && successes >= successThreshold) this.events.ready(true);
        if (!ok && failures >= failureThreshold) this.events.ready(false);
      } else if (kind === 'startup' && ok) {
        this.afterStartup();
        return;
      } else if (!ok && failures >= failureThreshold) {
        this.events.unhealthy(`${kind} probe failed ${failures} times`);
        return;
      }
      this.timers.set(kind, setTimeout(() => void tick(), period));
    };
    this.timers.set(kind, setTimeout(() => void tick(), (probe.initialDelaySeconds ?? 0) * 1000));
  }
}
