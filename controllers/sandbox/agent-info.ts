// The controllers' one call to a sandbox pod's agent: GET /info?runtimes=1, what a fresh pool
// member has installed (asked before any tenant code ran in it), authenticated with the pod's
// derived token. The controllers decide nothing else from the agent: a sandbox's idleness is what
// the API recorded (lib/sandbox/activity.ts). The answer is still read as untrusted input: at most
// 64 KiB, and only runtimes of the platform's catalogue with a version that reads as one.
import type * as k8s from '@kubernetes/client-node';
import { agentPort, agentToken } from '../../lib/sandbox/exec.js';
import { runtimeNamed, type InstalledRuntime } from '../../lib/sandbox/runtimes.js';

const maxInfoBytes = 64 * 1024;

async function readLimited(res: Response, limit: number): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel();
      throw new Error(`the agent answered more than ${limit} bytes to /info`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The runtimes an agent reports, kept only where they are the catalogue's own. */
export function checkRuntimes(x: unknown): InstalledRuntime[] {
  const list = (x as { runtimes?: unknown } | null)?.runtimes;
  if (!Array.isArray(list)) return [];
  return list.flatMap((r: unknown) => {
    const { name, version } = (r ?? {}) as { name?: unknown; version?: unknown };
    const def = typeof name === 'string' ? runtimeNamed(name) : undefined;
    if (!def || def.name !== name || typeof version !== 'string' || !/^[0-9A-Za-z][0-9A-Za-z.+~-]{0,39}$/.test(version)) return [];
    return [{ name: def.name, language: def.language, version, extension: def.extension, aliases: [...def.aliases], eval: true }];
  });
}

export async function agentRuntimes(pod: k8s.V1Pod, key: Buffer, timeoutMs: number): Promise<InstalledRuntime[]> {
  const res = await fetch(`http://${pod.status!.podIP}:${agentPort}/info?runtimes=1`, {
    headers: { authorization: `Bearer ${agentToken(key, pod.metadata!.name!)}` },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`the agent of ${pod.metadata!.name} answered ${res.status} to /info`);
  }
  return checkRuntimes(JSON.parse(await readLimited(res, maxInfoBytes)) as unknown);
}
