// A container's environment, resolved as the kubelet does: envFrom first, then env in order, with
// $(VAR) references expanded against what is defined before; plus the node-agent convention that
// tells a process where to bind (HOST, and PORT from the first container port) unless the pod sets them.
import type * as k8s from '@kubernetes/client-node';
import { FieldError, podField } from './fields.js';

export interface EnvSources {
  secret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  configMap(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

export class EnvError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvError';
  }
}

/** Expands $(VAR) from `env`; $$(VAR) escapes to a literal $(VAR); unknown references stay as written. */
export function expand(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && name in env ? env[name]! : m;
  });
}

export async function resolveEnv(pod: k8s.V1Pod, container: k8s.V1Container, podIP: string, sources: EnvSources): Promise<Record<string, string>> {
  const ns = pod.metadata?.namespace ?? 'default';
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const ref = from.secretRef ?? from.configMapRef;
    if (!ref?.name) continue;
    const data = from.secretRef ? await sources.secret(ns, ref.name) : await sources.configMap(ns, ref.name);
    if (!data) {
      if (ref.optional) continue;
      throw new EnvError(`${from.secretRef ? 'secret' : 'configmap'} "${ref.name}" not found`);
    }
    for (const [k, v] of Object.entries(data)) env[(from.prefix ?? '') + k] = v;
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined || !e.valueFrom) {
      env[e.name] = expand(e.value ?? '', env);
      continue;
    }
    const { secretKeyRef, configMapKeyRef, fieldRef } = e.valueFrom;
    if (fieldRef) {
      try {
        env[e.name] = podField(pod, fieldRef.fieldPath, podIP);
      } catch (err) {
        throw err instanceof FieldError ? new EnvError(`env ${e.name}: ${err.message}`) : err;
      }
    } else if (secretKeyRef || configMapKeyRef) {
      const ref = (secretKeyRef ?? configMapKeyRef)!;
      const kind = secretKeyRef ? 'secret' : 'configmap';
      const data = secretKeyRef ? await sources.secret(ns, ref.name!) : await sources.configMap(ns, ref.name!);
      const value = data?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        throw new EnvError(data ? `key "${ref.key}" not found in ${kind} "${ref.name}"` : `${kind} "${ref.name}" not found`);
      }
      env[e.name] = value;
    } else {
      throw new EnvError(`env ${e.name}: unsupported valueFrom (resourceFieldRef is not supported by node-agent)`);
    }
  }
  const port = container.ports?.[0]?.containerPort;
  return { HOST: podIP, ...(port ? { PORT: String(port) } : {}), POD_IP: podIP, ...env };
}
