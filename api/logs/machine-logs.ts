// The lines of an app's machines, read through the apiserver from the kubelets (k8s.Log, as
// `kubectl logs` does): recent lines of every machine merged by time, or a stream that follows the
// machines as they write, picks up machines that appear later, and aborts every upstream request
// when its reader goes away. api/operations/app-logs.ts serves it; docs/api/logs.md describes it.
import { Readable, Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { ApiError } from '../errors.js';
import type { ApiDeps } from '../deps.js';
import { containers, labels } from '../../lib/contract.js';
import type { MachineRepository } from '../repositories/machines.js';

/** The machine container, as controllers/app/machine-spec.ts names it. */
const containerName = containers.machine;
export const defaultTail = 100;
export const maxTail = 10_000;
/** While following: how often the machine list is read again. */
export const relistMs = 2_000;
/** Without follow: how long reading the machines' recent lines may take. */
const recentDeadlineMs = 30_000;
/** A line longer than this is cut (the rest comes as the next line) so one line cannot eat memory. */
const maxLineBytes = 256 * 1024;

/** One log line of one machine. `key` orders lines by time (fixed-width digits, nanoseconds). */
export interface LogLine {
  key: string;
  /** The kubelet's timestamp, as an ISO 8601 UTC time with milliseconds. */
  time: string;
  machine: number | null;
  /** The machine's service, in an app with several (compose services); null otherwise. */
  service: string | null;
  pod: string;
  line: string;
}

const timestampPattern = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) /;

function keyOf(ms: number, nanosOfSecond: string): string {
  return `${String(Math.floor(ms / 1000)).padStart(12, '0')}${nanosOfSecond}`;
}

export function keyOfDate(d: Date): string {
  const ms = d.getTime();
  return keyOf(ms, `${String(((ms % 1000) + 1000) % 1000).padStart(3, '0')}000000`);
}

/** Splits a kubelet line (`<RFC3339Nano> <text>`, from timestamps=true) into its time and text. */
export function parseKubeletLine(raw: string): { key: string; time: string; text: string } | undefined {
  const m = timestampPattern.exec(raw);
  if (!m) return undefined;
  const seconds = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(seconds)) return undefined;
  const nanos = (m[2] ?? '').padEnd(9, '0');
  return { key: keyOf(seconds, nanos), time: new Date(seconds + Number(nanos.slice(0, 3))).toISOString(), text: raw.slice(m[0].length) };
}

export type LogFormat = 'text' | 'ndjson';

export function formatLine(l: LogLine, format: LogFormat): string {
  if (format === 'ndjson')
    return `${JSON.stringify({ time: l.time, machine: l.machine, ...(l.service !== null ? { service: l.service } : {}), pod: l.pod, line: l.line })}\n`;
  return `${l.time} ${l.machine === null ? l.pod : `${l.service !== null ? `${l.service}/` : ''}m${l.machine}`} ${l.line}\n`;
}

export function wantsNdjson(accept: string | string[] | undefined): boolean {
  const value = Array.isArray(accept) ? accept.join(',') : (accept ?? '');
  return value
    .split(',')
    .map((part) => part.split(';'))
    .some(
      ([type, ...params]) =>
        type?.trim().toLowerCase() === 'application/x-ndjson' && !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/i.test(p)),
    );
}

/** Cuts a byte stream into lines (without their newline), never splitting a UTF-8 character. */
class LineSplitter {
  private rest: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): string[] {
    let data = this.rest.length ? Buffer.concat([this.rest, chunk]) : chunk;
    const out: string[] = [];
    for (let nl = data.indexOf(0x0a); nl !== -1; nl = data.indexOf(0x0a)) {
      out.push(data.subarray(0, nl).toString('utf8'));
      data = data.subarray(nl + 1);
    }
    while (data.length > maxLineBytes) {
      // Never inside a UTF-8 character: back off to the start of one.
      let cut = maxLineBytes;
      while (cut > 0 && (data[cut]! & 0xc0) === 0x80) cut--;
      out.push(data.subarray(0, cut).toString('utf8'));
      data = data.subarray(cut);
    }
    this.rest = Buffer.from(data);
    return out;
  }

  flush(): string | undefined {
    const last = this.rest.length ? this.rest.toString('utf8') : undefined;
    this.rest = Buffer.alloc(0);
    return last;
  }
}

function machineOf(pod: k8s.V1Pod): number | null {
  const v = pod.metadata?.labels?.[labels.machine];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
}

function appContainer(pod: k8s.V1Pod): k8s.V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((c) => c.name === containerName);
}

/** Whether the machine's container has run, so the kubelet has a log for it. */
function hasLog(pod: k8s.V1Pod): boolean {
  const c = appContainer(pod);
  return !!c && !!(c.state?.running || c.state?.terminated || c.lastState?.terminated);
}

/** One container instance: a restart (or another container ID) is another log. */
function instanceOf(pod: k8s.V1Pod): string {
  const c = appContainer(pod);
  return `${c?.containerID ?? ''}/${c?.restartCount ?? 0}`;
}

/** The app's machine Pods, by one label-selected list, in machine then name order. */
/** The app's machines (of one service, when `service` is given), by ordinal. */
export async function listMachines(s: Pick<ApiDeps, 'machines'>, namespace: string, app: string, service?: string): Promise<k8s.V1Pod[]> {
  const pods = (await s.machines.list(namespace, app)).filter(
    (p) => service === undefined || p.metadata?.labels?.[labels.service] === service,
  );
  return pods.sort((a, b) => (machineOf(a) ?? Infinity) - (machineOf(b) ?? Infinity) || a.metadata!.name!.localeCompare(b.metadata!.name!));
}

interface UpstreamOptions {
  follow: boolean;
  tailLines?: number;
  sinceTime?: string;
}

interface Upstream {
  /** Ends the upstream request now. */
  abort(): void;
  /** Settles when the upstream response has ended, failed or been aborted. */
  done: Promise<void>;
}

/**
 * Opens one kubelet log through the apiserver and calls `onLine` for each raw line (with its
 * timestamp). `onLine` returns false when the reader is full; then `drained` is awaited before the
 * next chunk is taken, which holds the upstream back instead of buffering without bound.
 */
async function openUpstream(
  log: Pick<MachineRepository, 'logs'>,
  namespace: string,
  pod: string,
  options: UpstreamOptions,
  onLine: (raw: string) => boolean,
  drained: () => Promise<void>,
): Promise<Upstream> {
  const splitter = new LineSplitter();
  let settle!: () => void;
  const done = new Promise<void>((resolve) => (settle = resolve));
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      let room = true;
      for (const raw of splitter.push(chunk)) room = onLine(raw) && room;
      if (room) callback();
      else void drained().then(() => callback());
    },
    final(callback) {
      const last = splitter.flush();
      if (last) onLine(last);
      callback();
    },
  });
  // node-fetch reports an aborted or broken response as an error of the piped body: end the sink
  // then (pipe only ends it on a clean end).
  sink.on('pipe', (src: Readable) => src.once('error', () => sink.end()));
  sink.once('finish', () => settle());
  sink.once('close', () => settle());
  sink.on('error', () => settle());
  let controller: AbortController;
  try {
    controller = await log.logs(namespace, pod, containerName, sink, {
      follow: options.follow,
      timestamps: true,
      ...(options.tailLines ? { tailLines: options.tailLines } : {}),
      ...(options.sinceTime ? { sinceTime: options.sinceTime } : {}),
    });
  } catch (err) {
    sink.destroy();
    throw err;
  }
  return {
    abort: () => {
      controller.abort();
      sink.destroy();
    },
    done,
  };
}

/** RFC3339 to the second, at or before `key`'s instant: the apiserver's sinceTime. */
function sinceTimeOf(key: string): string {
  return new Date(Number(key.slice(0, 12)) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface Selection {
  tail: number;
  /** Lines before this are left out (from `since`). */
  fromKey?: string;
}

function lineOf(pod: k8s.V1Pod, raw: string, fallbackKey: string): LogLine {
  const parsed = parseKubeletLine(raw);
  const key = parsed?.key ?? fallbackKey;
  return {
    key,
    time: parsed?.time ?? new Date(Number(key.slice(0, 12)) * 1000 + Number(key.slice(12, 15))).toISOString(),
    machine: machineOf(pod),
    service: pod.metadata?.labels?.[labels.service] ?? null,
    pod: pod.metadata!.name!,
    line: parsed ? parsed.text : raw,
  };
}

/** Without follow: the last `tail` lines of each machine, merged in time order. */
export async function recentLines(
  log: Pick<MachineRepository, 'logs'>,
  namespace: string,
  pods: k8s.V1Pod[],
  sel: Selection,
  nowKey: string,
): Promise<LogLine[]> {
  if (sel.tail === 0) return [];
  const upstreams: Upstream[] = [];
  const perPod = pods.filter(hasLog).map(async (pod) => {
    const lines: LogLine[] = [];
    try {
      const up = await openUpstream(
        log,
        namespace,
        pod.metadata!.name!,
        { follow: false, tailLines: sel.tail, ...(sel.fromKey ? { sinceTime: sinceTimeOf(sel.fromKey) } : {}) },
        (raw) => {
          const l = lineOf(pod, raw, lines.at(-1)?.key ?? nowKey);
          if (!sel.fromKey || l.key >= sel.fromKey) lines.push(l);
          return true;
        },
        async () => undefined,
      );
      upstreams.push(up);
      await up.done;
    } catch {
      // A machine whose log cannot be read (it just went away, or has not started) adds no lines.
    }
    return lines.slice(-sel.tail);
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, recentDeadlineMs)));
  const all = await Promise.race([Promise.all(perPod), deadline.then(() => undefined)]);
  clearTimeout(timer);
  if (!all) {
    for (const up of upstreams) up.abort();
    throw new ApiError('unavailable', "reading the machines' logs took too long; retry later");
  }
  // Each machine's lines are in order already; a stable sort by time keeps that and interleaves them.
  return all.flat().sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

interface Follow {
  upstream?: Upstream;
  /** An upstream is being opened or is open. */
  active: boolean;
  /** The container instance last streamed; undefined before the first stream. */
  instance?: string;
  /** The last line sent: a new upstream for this machine resumes after it. */
  lastKey?: string;
  /** The machine had a log when the request came: its first upstream starts with `tail` lines. */
  tailFirst: boolean;
}

export interface FollowContext {
  s: Pick<ApiDeps, 'machines' | 'apps' | 'log'>;
  log: Pick<MachineRepository, 'logs'>;
  namespace: string;
  app: string;
  appUid: string;
  /** Only this service's machines. */
  service?: string | undefined;
  sel: Selection;
  format: LogFormat;
}

/**
 * With follow: the response body. One upstream per machine Pod, each pushing its lines as they
 * come; the machine list is read again every relistMs to pick up new machines (and new container
 * instances); the stream ends when the app is deleted. Destroying it (the client went away) aborts
 * every upstream and stops the re-listing.
 */
export class FollowStream extends Readable {
  private readonly machines = new Map<string, Follow>();
  private timer: NodeJS.Timeout | undefined;
  private ended = false;
  private waiting: Array<() => void> = [];

  constructor(
    private readonly c: FollowContext,
    initialPods: k8s.V1Pod[],
  ) {
    super();
    this.sync(initialPods, true);
    this.timer = setTimeout(() => void this.relist(), relistMs);
  }

  /** How many upstream requests are open or being opened. */
  get openUpstreams(): number {
    return [...this.machines.values()].filter((m) => m.active).length;
  }

  override _read(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resume of waiting) resume();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.ended = true;
    clearTimeout(this.timer);
    for (const m of this.machines.values()) m.upstream?.abort();
    this.machines.clear();
    this._read();
    callback(err);
  }

  private drained = (): Promise<void> => (this.ended ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve)));

  private async relist(): Promise<void> {
    try {
      const app = await this.c.s.apps.find(this.c.namespace, this.c.app);
      if (this.ended) return;
      if (!app || app.id !== this.c.appUid) {
        // The app was deleted: its log ends here.
        this.ended = true;
        for (const m of this.machines.values()) m.upstream?.abort();
        this.machines.clear();
        this.push(null);
        return;
      }
      const pods = await listMachines(this.c.s, this.c.namespace, this.c.app, this.c.service);
      if (!this.ended) this.sync(pods, false);
    } catch (err) {
      this.c.s.log.warn({ err, app: this.c.app, namespace: this.c.namespace }, 'Following app logs: cannot list machines');
    } finally {
      if (!this.ended) this.timer = setTimeout(() => void this.relist(), relistMs);
    }
  }

  private sync(pods: k8s.V1Pod[], initial: boolean): void {
    const present = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata!.uid!;
      present.add(uid);
      let m = this.machines.get(uid);
      if (!m) {
        m = { active: false, tailFirst: initial && hasLog(pod) };
        this.machines.set(uid, m);
      }
      if (m.active || !hasLog(pod)) continue;
      // A running container is (re)followed; a finished one only once per container instance.
      const running = !!appContainer(pod)?.state?.running;
      if (running || m.instance !== instanceOf(pod)) this.start(pod, m);
    }
    for (const [uid, m] of this.machines) {
      if (present.has(uid)) continue;
      m.upstream?.abort();
      this.machines.delete(uid);
    }
  }

  private start(pod: k8s.V1Pod, m: Follow): void {
    m.active = true;
    m.instance = instanceOf(pod);
    const { sel } = this.c;
    const options: UpstreamOptions = { follow: true };
    if (m.lastKey) options.sinceTime = sinceTimeOf(m.lastKey);
    else {
      if (m.tailFirst) options.tailLines = sel.tail;
      if (sel.fromKey) options.sinceTime = sinceTimeOf(sel.fromKey);
      // tail=0: nothing from before the request (a 0 tailLines is not sent upstream).
    }
    m.tailFirst = false;
    const name = pod.metadata!.name!;
    const onLine = (raw: string): boolean => {
      if (this.ended) return true;
      const l = lineOf(pod, raw, m.lastKey ?? keyOfDate(new Date()));
      if (m.lastKey && l.key <= m.lastKey) return true;
      if (sel.fromKey && l.key < sel.fromKey) return true;
      m.lastKey = l.key;
      return this.push(formatLine(l, this.c.format));
    };
    openUpstream(this.c.log, this.c.namespace, name, options, onLine, this.drained)
      .then((up) => {
        if (this.ended || this.machines.get(pod.metadata!.uid!) !== m) {
          up.abort();
          return;
        }
        m.upstream = up;
        return up.done;
      })
      .catch((err: unknown) => {
        if (!this.ended) this.c.s.log.debug({ err, pod: name }, 'Following app logs: cannot read a machine log');
      })
      .finally(() => {
        m.active = false;
        m.upstream = undefined;
      });
  }
}
