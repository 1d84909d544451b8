// Which images node-agent can run, and how: an image maps to a local command. Common base images
// run the container's command on the host as written (their entry point when it gives none); any
// other image is refused with a clear reason instead of being silently skipped.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { repoRoot } from '../lib/paths.js';

const ruleSchema = z.strictObject({
  /** Repository name without registry, tag or digest: `busybox`, `node`, `svc/runtime`. */
  image: z.string().min(1),
  /** The image's ENTRYPOINT: replaced by the container's `command`. */
  entrypoint: z.array(z.string().min(1)).default([]),
  /** The image's CMD: replaced by the container's `args`, dropped when `command` is given. */
  cmd: z.array(z.string()).default([]),
  /** Renames of argv[0], for images whose tools have other names on the host (python -> python3). */
  aliases: z.record(z.string(), z.string()).default({}),
});
export type ImageRule = z.infer<typeof ruleSchema>;

/** The platform's own images run this repository's entry points (built into dist/ by make). */
const platformImages = (repo: string): ImageRule[] => [
  { image: 'svc/runtime', entrypoint: [process.execPath, path.join(repo, 'dist/runtime/main.js')], cmd: [], aliases: {} },
];

export const defaultImageRules: ImageRule[] = [
  ...platformImages(repoRoot),
  { image: 'busybox', entrypoint: [], cmd: ['sh'], aliases: {} },
  { image: 'alpine', entrypoint: [], cmd: ['sh'], aliases: { '/bin/sh': 'sh' } },
  { image: 'debian', entrypoint: [], cmd: ['bash'], aliases: {} },
  { image: 'node', entrypoint: [], cmd: ['node'], aliases: {} },
  { image: 'python', entrypoint: [], cmd: ['python3'], aliases: { python: 'python3' } },
];

export function loadImageRules(file: string | undefined): ImageRule[] {
  if (!file) return defaultImageRules;
  const extra = z.array(ruleSchema).parse(JSON.parse(readFileSync(file, 'utf8')));
  return [...extra, ...defaultImageRules];
}

/** `docker.io/library/busybox:1.36@sha256:...` -> `busybox`; `ghcr.io/svc/runtime:v1` -> `svc/runtime`. */
export function repositoryOf(image: string): string {
  let name = image.split('@')[0]!;
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon > lastSlash) name = name.slice(0, colon);
  const parts = name.split('/');
  if (parts.length > 1 && (parts[0]!.includes('.') || parts[0]!.includes(':') || parts[0] === 'localhost')) parts.shift();
  if (parts[0] === 'library') parts.shift();
  return parts.join('/');
}

export function ruleFor(image: string, rules: readonly ImageRule[]): ImageRule | undefined {
  const repo = repositoryOf(image);
  return rules.find((r) => r.image === repo);
}

/**
 * The argv to run, by Kubernetes' rules: `command` replaces the image's ENTRYPOINT (and drops its
 * CMD), `args` replaces its CMD. Empty when there is nothing to run.
 */
export function argvFor(rule: ImageRule, command: string[] | undefined, args: string[] | undefined): string[] {
  const argv = command?.length ? [...command, ...(args ?? [])] : [...rule.entrypoint, ...(args?.length ? args : rule.cmd)];
  if (argv.length) argv[0] = rule.aliases[argv[0]!] ?? argv[0]!;
  return argv;
}
