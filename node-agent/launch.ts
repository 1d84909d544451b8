// What it takes to start one container, decided before anything runs: the image's rule, the
// working directory, the argv with its wrappers (volumes through bwrap, or the sandbox) and the
// environment; or the waiting reason that stops it, as the kubelet would report it.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { expand } from './env.js';
import { argvFor, ruleFor, type ImageRule } from './images.js';
import { bwrapArgs, sandboxArgs, type Mount } from './mounts.js';

export interface Waiting {
  waiting: { reason: string; message: string };
}

export interface LaunchPlan {
  /** The container's own argv, behind the mount or sandbox wrapper when there is one. */
  argv: string[];
  /** Whether argv starts with a wrapper (bwrap) that runs the container as its child. */
  wrapped: boolean;
  cwd: string;
  env: Record<string, string>;
}

export function imageProblem(image: string | undefined, rules: readonly ImageRule[]): Waiting | undefined {
  if (ruleFor(image ?? '', rules)) return undefined;
  const known = rules.map((r) => r.image).join(', ');
  return {
    waiting: {
      reason: 'ImageNotRunnable',
      message: `node-agent cannot run image "${image}": it is not in the image map (runnable: ${known}; see docs/node-agent.md)`,
    },
  };
}

export function planLaunch(input: {
  spec: k8s.V1Container;
  rules: readonly ImageRule[];
  env: Record<string, string>;
  /** The pod's own folder (its processes' home and, in a sandbox, their only files). */
  home: string;
  volumes: ReadonlyMap<string, string>;
  podName: string;
  sandbox: { unshareNet: boolean } | undefined;
}): LaunchPlan | Waiting {
  const { spec, env, home } = input;
  const rule = ruleFor(spec.image ?? '', input.rules);
  if (!rule) return imageProblem(spec.image, input.rules)!;
  const cwd = input.sandbox ? home : (spec.workingDir ?? home);
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
    return { waiting: { reason: 'CreateContainerError', message: `workingDir ${cwd} does not exist on the node` } };
  }
  const argv = argvFor(rule, spec.command, spec.args).map((a) => expand(a, env));
  if (!argv.length) {
    return { waiting: { reason: 'CreateContainerError', message: `no command: image "${spec.image}" has no entry point and the container gives none` } };
  }
  const mounts: Mount[] = [];
  for (const vm of spec.volumeMounts ?? []) {
    const host = input.volumes.get(vm.name);
    if (!host) return { waiting: { reason: 'CreateContainerError', message: `volumeMount ${vm.name}: the pod has no such volume` } };
    mounts.push({ hostPath: vm.subPath ? path.join(host, vm.subPath) : host, mountPath: vm.mountPath, readOnly: vm.readOnly ?? false });
  }
  const wrapper = input.sandbox ? sandboxArgs(home, mounts, input.sandbox.unshareNet) : bwrapArgs(mounts);
  return {
    argv: [...wrapper, ...argv],
    wrapped: wrapper.length > 0,
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: home, HOSTNAME: input.podName, ...env },
  };
}
