// A build's log: while it runs, the kubelet's log of its Pod's containers (the source fetch, then the
// builder), read through the apiserver and followed as written; once it ended, the copy kept in the
// artifact store (the recorder makes it from the same containers before the Job goes), so a log
// reads the same the day after. The platform's own lines (`==> `) frame it: the first comes at once, so a
// client sees a byte as soon as it asks, whatever the Pod is doing.
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as k8s from '@kubernetes/client-node';
import type { ArtifactStore } from '../../lib/artifacts/store.js';
import { terminalPhases } from '../../lib/builds/index.js';
import type { BuildRecord, BuildStore } from '../../lib/builds/store.js';
import { labels } from '../../lib/contract.js';
import type { Build } from '../../lib/resources/index.js';
import type { MachineRepository } from '../repositories/machines.js';
import type { BuildRepository } from './repository.js';

/** The Job's containers, in the order they run. */
const steps = ['source', 'build'] as const;
const pollMs = 250;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function headLine(b: Pick<BuildRecord, 'id' | 'app' | 'createdAt'>): string {
  return `==> build ${b.id} of app ${b.app}, asked for at ${b.createdAt.toISOString()}\n`;
}

export function endLine(b: Build | undefined, r: Pick<BuildRecord, 'phase' | 'reason' | 'message'>): string {
  const phase = b?.status?.phase ?? r.phase;
  const message = b?.status?.message ?? r.message;
  const reason = b?.status?.reason ?? r.reason;
  return `==> ${phase}${reason && reason !== phase ? ` (${reason})` : ''}${message ? `: ${message}` : ''}\n`;
}

export interface LogDeps {
  core: k8s.CoreV1Api;
  machines: Pick<MachineRepository, 'logs'>;
  builds: BuildRepository;
  store: BuildStore;
  /** Where ended builds' logs are kept, and for how many days after the build. */
  artifacts: Pick<ArtifactStore, 'open'>;
  keptDays: number;
}

async function podOf(core: k8s.CoreV1Api, namespace: string, id: string): Promise<k8s.V1Pod | undefined> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `${labels.build}=${id}` }).catch(() => undefined);
  return pods?.items.sort((a, b) => String(b.metadata?.creationTimestamp).localeCompare(String(a.metadata?.creationTimestamp)))[0];
}

function containerState(pod: k8s.V1Pod, name: string): k8s.V1ContainerState | undefined {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((c) => c.name === name)?.state;
}

const ended = (b: Build | undefined) => !b || (b.status?.phase !== undefined && terminalPhases.has(b.status.phase));

/** Everything the containers logged so far, source first (what the recorder keeps). */
export async function collectLog(core: k8s.CoreV1Api, namespace: string, id: string): Promise<string | undefined> {
  const pod = await podOf(core, namespace, id);
  if (!pod) return undefined;
  let text = '';
  for (const step of steps) {
    const state = containerState(pod, step);
    if (!state?.running && !state?.terminated) continue;
    const body = await core.readNamespacedPodLog({ namespace, name: pod.metadata!.name!, container: step }).catch(() => '');
    text += typeof body === 'string' ? body : String(body);
  }
  return text;
}

/**
 * The log as a stream of text: the kept copy of an ended build, or the live one (followed until the
 * build ends when `follow`). `closed` tells when the reader went away.
 */
export function buildLogStream(d: LogDeps, record: BuildRecord, namespace: string, follow: boolean): PassThrough {
  const out = new PassThrough();
  let gone = false;
  out.on('close', () => (gone = true));
  const write = (text: string) => {
    if (!gone) out.write(text);
  };
  void (async () => {
    try {
      const kept = await d.store.log(record.accountId, record.id);
      if (kept) {
        write(headLine(record));
        if (kept.truncated) write('==> (the start of this log was cut: it was longer than the platform keeps)\n');
        if ('text' in kept) write(kept.text);
        else {
          const stored = await d.artifacts.open(kept.digest);
          out.once('close', () => stored?.stream.destroy());
          if (!stored) write(`==> this build's log is no longer kept (build logs are kept ${d.keptDays} days after the build)\n`);
          // Streamed from the store as the reader takes it, not read whole first.
          else
            await pipeline(
              stored.stream,
              new Writable({ write: (chunk: Buffer, _e, cb) => (gone ? cb() : out.write(chunk) ? cb() : out.once('drain', () => cb())) }),
            ).catch((err: unknown) => {
              if (!gone) throw err;
            });
        }
        write(endLine(undefined, (await d.store.get(record.accountId, record.id)) ?? record));
        return;
      }
      write(headLine(record));
      const current = () => d.builds.get(namespace, record.id);
      let announcedWait = false;
      for (const step of steps) {
        // Wait for this container to have run (or for the build to end without it).
        let pod: k8s.V1Pod | undefined;
        for (;;) {
          if (gone) return;
          pod = await podOf(d.core, namespace, record.id);
          const state = pod && containerState(pod, step);
          if (state?.running || state?.terminated) break;
          if (ended(current()) || !follow) {
            pod = undefined;
            break;
          }
          if (!announcedWait) {
            write(`==> waiting for a builder${current()?.status?.message ? ` (${current()!.status!.message})` : ''}\n`);
            announcedWait = true;
          }
          await sleep(pollMs);
        }
        if (!pod) continue;
        await new Promise<void>((resolve) => {
          const sink = new Writable({
            write(chunk: Buffer, _e, cb) {
              if (gone) return cb();
              if (out.write(chunk)) cb();
              else out.once('drain', () => cb());
            },
          });
          sink.on('finish', () => resolve());
          sink.on('error', () => resolve());
          sink.on('pipe', (src: NodeJS.ReadableStream) => src.once('error', () => sink.end()));
          d.machines
            .logs(namespace, pod.metadata!.name!, step, sink, { follow, timestamps: false })
            .then((controller) => out.once('close', () => controller.abort()))
            .catch(() => resolve());
        });
      }
      // The end, as the Build's status tells it (a moment after the last line, at most a few seconds).
      for (let i = 0; follow && i < 40 && !ended(current()); i++) await sleep(pollMs);
      const last = current();
      if (ended(last) || !follow) write(endLine(last, record));
    } catch (err) {
      write(`==> the log could not be read to the end: ${(err as Error).message}\n`);
    } finally {
      out.end();
    }
  })();
  return out;
}
