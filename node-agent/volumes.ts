// A pod's volumes as host directories under the pod's folder, which mounts.ts then shows to each
// container at its mountPath: emptyDir, secret, configMap, downwardAPI, projected (including the
// service-account token the ServiceAccount admission plugin adds to every pod) and hostPath.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { FieldError, podField } from './fields.js';

export interface VolumeSources {
  secret(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
  configMap(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
  /** The host directory of a bound claim's volume; undefined while the claim is not bound. */
  claimPath(namespace: string, claim: string): Promise<string | undefined>;
  /** A bound service-account token for the pod (TokenRequest, as the kubelet does). */
  token(pod: k8s.V1Pod, audience: string | undefined, expirationSeconds: number): Promise<string>;
}

export class VolumeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VolumeError';
  }
}

type Items = Array<{ key: string; path: string; mode?: number }> | undefined;

function writeItems(dir: string, data: Record<string, Buffer>, items: Items, mode: number, what: string): void {
  const entries = items ? items.map((i) => [i.key, i.path, i.mode ?? mode] as const) : Object.keys(data).map((k) => [k, k, mode] as const);
  for (const [key, rel, m] of entries) {
    const value = data[key];
    if (value === undefined) throw new VolumeError(`${what} has no key "${key}"`);
    const file = path.join(dir, rel);
    if (!file.startsWith(dir + path.sep)) throw new VolumeError(`${what}: item path "${rel}" leaves the volume`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, value, { mode: m });
  }
}

async function fill(dir: string, pod: k8s.V1Pod, v: k8s.V1Volume | k8s.V1VolumeProjection, src: VolumeSources, defaultMode: number): Promise<void> {
  const ns = pod.metadata!.namespace!;
  if ('secret' in v && v.secret) {
    const name = 'secretName' in v.secret ? (v.secret as k8s.V1SecretVolumeSource).secretName! : (v.secret as k8s.V1SecretProjection).name!;
    const data = await src.secret(ns, name);
    if (!data) {
      if (v.secret.optional) return;
      throw new VolumeError(`secret "${name}" not found`);
    }
    writeItems(dir, data, v.secret.items, defaultMode, `secret "${name}"`);
  } else if ('configMap' in v && v.configMap) {
    const name = v.configMap.name!;
    const data = await src.configMap(ns, name);
    if (!data) {
      if (v.configMap.optional) return;
      throw new VolumeError(`configmap "${name}" not found`);
    }
    writeItems(dir, data, v.configMap.items, defaultMode, `configmap "${name}"`);
  } else if ('downwardAPI' in v && v.downwardAPI) {
    for (const item of v.downwardAPI.items ?? []) {
      if (!item.fieldRef) throw new VolumeError(`downwardAPI item ${item.path}: only fieldRef is supported`);
      let value: string;
      try {
        value = podField(pod, item.fieldRef.fieldPath);
      } catch (err) {
        throw err instanceof FieldError ? new VolumeError(`downwardAPI item ${item.path}: ${err.message}`) : err;
      }
      writeItems(dir, { [item.path]: Buffer.from(value) }, undefined, item.mode ?? defaultMode, 'downwardAPI');
    }
  } else if ('serviceAccountToken' in v && v.serviceAccountToken) {
    const t = v.serviceAccountToken;
    const token = await src.token(pod, t.audience, t.expirationSeconds ?? 3607);
    writeItems(dir, { [t.path]: Buffer.from(token) }, undefined, defaultMode, 'serviceAccountToken');
  } else if ('clusterTrustBundle' in v && v.clusterTrustBundle) {
    throw new VolumeError('clusterTrustBundle projections are not supported by node-agent');
  }
}

/** Prepares every volume of the pod; returns volume name -> host path. Throws VolumeError. */
export async function prepareVolumes(pod: k8s.V1Pod, podDir: string, src: VolumeSources): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    const dir = path.join(podDir, 'volumes', v.name);
    if (v.hostPath) {
      out.set(v.name, v.hostPath.path);
      continue;
    }
    if (v.persistentVolumeClaim) {
      const claim = v.persistentVolumeClaim.claimName;
      const dir = await src.claimPath(pod.metadata!.namespace!, claim);
      if (!dir) throw new VolumeError(`volume ${v.name}: claim "${claim}" is not bound to a volume node-agent can mount`);
      out.set(v.name, dir);
      continue;
    }
    const supported = v.emptyDir || v.secret || v.configMap || v.downwardAPI || v.projected;
    if (!supported) throw new VolumeError(`volume ${v.name}: this volume type is not supported by node-agent`);
    // Secrets and config maps are written afresh on every pod start; an emptyDir keeps its content.
    if (!v.emptyDir) rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    if (v.projected) {
      for (const source of v.projected.sources ?? []) await fill(dir, pod, source, src, v.projected.defaultMode ?? 0o644);
    } else if (!v.emptyDir) {
      const mode = v.secret?.defaultMode ?? v.configMap?.defaultMode ?? v.downwardAPI?.defaultMode ?? 0o644;
      await fill(dir, pod, v, src, mode);
    }
    out.set(v.name, dir);
  }
  return out;
}
