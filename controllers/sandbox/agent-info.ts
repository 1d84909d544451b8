// The controllers' one call to a sandbox pod's agent: GET /info (its last activity, and with
// `runtimes` what it has installed), authenticated with the pod's derived token.
import type * as k8s from '@kubernetes/client-node';
import { agentPort, agentToken, type AgentInfo } from '../../lib/sandbox/exec.js';

export async function agentInfo(pod: k8s.V1Pod, key: Buffer, opts: { runtimes?: boolean; timeoutMs: number }): Promise<AgentInfo> {
  const res = await fetch(`http://${pod.status!.podIP}:${agentPort}/info${opts.runtimes ? '?runtimes=1' : ''}`, {
    headers: { authorization: `Bearer ${agentToken(key, pod.metadata!.name!)}` },
    signal: AbortSignal.timeout(opts.timeoutMs),
  });
  if (!res.ok) throw new Error(`the agent of ${pod.metadata!.name} answered ${res.status} to /info`);
  return (await res.json()) as AgentInfo;
}
