// Dockerfiles as the platform builds them without a daemon or root (decision 0019): one stage on one
// of the platform's bases, its steps run by the builder as the build's non-root user, the files
// under the image's directories it made kept as one layer. Parsed here, purely, into steps; what it
// cannot honour is refused by name (a second FROM, a base from elsewhere, USER root, ADD of a URL,
// an instruction it does not know), never ignored. docs/api/builds.md#dockerfiles.
import { posix } from 'node:path';

export type DockerStep =
  | { op: 'workdir'; path: string }
  | { op: 'copy'; sources: string[]; dest: string }
  | { op: 'run'; shell: string | null; exec: string[] | null }
  | { op: 'env'; name: string; value: string };

export interface DockerImage {
  /** The FROM line's image, as written (the platform's base stands for it). */
  from: string;
  steps: DockerStep[];
  /** The image's settings as the Dockerfile leaves them. */
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[] | null;
  cmd: string[] | null;
  port: number | null;
}

export class DockerfileError extends Error {}

/** Bases the platform has (make images): each stands for the builder image, which has them all. */
const bases = /^(docker\.io\/)?(library\/)?(node|python|debian|ubuntu|buildpack-deps)(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$/;
const ignored = new Set(['LABEL', 'MAINTAINER', 'STOPSIGNAL', 'SHELL']);

/** Joins `\` continuations and drops comments and blank lines: [line number, instruction line]. */
function logicalLines(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let current = '';
  let start = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/^\s+/, '');
    if (!current && (line === '' || line.startsWith('#'))) return;
    if (!current) start = i + 1;
    if (current && line.startsWith('#')) return;
    if (/\\\s*$/.test(raw)) current += `${raw.replace(/\\\s*$/, '')} `;
    else {
      out.push([start, (current + raw).trim()]);
      current = '';
    }
  });
  if (current.trim()) out.push([start, current.trim()]);
  return out;
}

/** `["a", "b"]` (exec form) or undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const v = JSON.parse(args) as unknown;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v;
  } catch {
    // Not JSON: the shell form, as Docker takes it.
  }
  return undefined;
}

function expand(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (m, name: string) => vars[name] ?? m);
}

export function parseDockerfile(text: string, file = 'Dockerfile'): DockerImage {
  let from: string | undefined;
  const steps: DockerStep[] = [];
  const env: Record<string, string> = {};
  const args: Record<string, string> = {};
  let workdir = '/';
  let entrypoint: string[] | null = null;
  let cmd: string[] | null = null;
  let port: number | null = null;
  for (const [n, line] of logicalLines(text)) {
    const m = /^([A-Za-z]+)\s*(.*)$/s.exec(line);
    if (!m) throw new DockerfileError(`${file}:${n}: not an instruction: ${line.slice(0, 80)}`);
    const op = m[1]!.toUpperCase();
    const rest = m[2]!.trim();
    const where = `${file}:${n}: ${op}`;
    const vars = { ...args, ...env };
    if (!from && op !== 'FROM' && op !== 'ARG') throw new DockerfileError(`${where}: comes before FROM`);
    switch (op) {
      case 'FROM': {
        if (from) throw new DockerfileError(`${where}: a second FROM (a multi-stage build) is not supported: build in one stage`);
        const image = expand(rest.split(/\s+/)[0] ?? '', vars);
        if (rest.includes('--platform')) throw new DockerfileError(`${where}: --platform is not supported`);
        if (!bases.test(image))
          throw new DockerfileError(
            `${where}: ${image} is not a base this platform has: use node, python, debian or ubuntu (they stand for the platform's base, with Node.js and Python)`,
          );
        from = image;
        break;
      }
      case 'ARG': {
        const [name, value = ''] = rest.split('=', 2) as [string, string?];
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new DockerfileError(`${where}: ${name} is not a name`);
        args[name] = value;
        break;
      }
      case 'ENV': {
        const pairs = /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest)
          ? [...rest.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|'([^']*)'|(\S*))/g)].map(
              (x) => [x[1]!, x[3] ?? x[4] ?? x[5] ?? ''] as const,
            )
          : [[rest.split(/\s+/)[0]!, rest.slice(rest.split(/\s+/)[0]!.length).trim()] as const];
        for (const [name, value] of pairs) {
          env[name] = expand(value, vars);
          steps.push({ op: 'env', name, value: env[name] });
        }
        break;
      }
      case 'WORKDIR': {
        workdir = posix.resolve(workdir, expand(rest, vars));
        steps.push({ op: 'workdir', path: workdir });
        break;
      }
      case 'COPY':
      case 'ADD': {
        const words = (execForm(rest) ?? rest.split(/\s+/)).filter((w) => !/^--chown=|^--chmod=|^--link$/.test(w));
        if (words.some((w) => w.startsWith('--')))
          throw new DockerfileError(
            `${where}: ${words.find((w) => w.startsWith('--'))} is not supported (COPY --from needs a multi-stage build)`,
          );
        if (words.length < 2) throw new DockerfileError(`${where}: needs a source and a destination`);
        const sources = words.slice(0, -1).map((w) => expand(w, vars));
        if (op === 'ADD' && sources.some((w) => /^[a-z]+:\/\//.test(w) || /\.(tar|tgz|tar\.gz|tar\.xz|tar\.bz2)$/.test(w)))
          throw new DockerfileError(`${where}: ADD of a URL or an archive is not supported: use COPY of files in the source`);
        if (sources.some((w) => posix.normalize(w).startsWith('..') || w.startsWith('/')))
          throw new DockerfileError(`${where}: sources must be inside the source tree`);
        steps.push({
          op: 'copy',
          sources,
          dest: posix.resolve(workdir, expand(words.at(-1)!, vars)) + (words.at(-1)!.endsWith('/') ? '/' : ''),
        });
        break;
      }
      case 'RUN': {
        if (/^--/.test(rest)) throw new DockerfileError(`${where}: ${rest.split(/\s+/)[0]} is not supported`);
        const exec = execForm(rest);
        steps.push(exec ? { op: 'run', shell: null, exec } : { op: 'run', shell: rest, exec: null });
        break;
      }
      case 'CMD':
      case 'ENTRYPOINT': {
        const value = execForm(rest) ?? ['/bin/sh', '-c', rest];
        if (op === 'CMD') cmd = value;
        else entrypoint = value;
        break;
      }
      case 'EXPOSE': {
        const p = Number(rest.split(/\s+/)[0]!.replace(/\/tcp$/, ''));
        if (!Number.isInteger(p) || p < 1 || p > 65535) throw new DockerfileError(`${where}: ${rest} is not a TCP port`);
        port ??= p;
        break;
      }
      case 'USER': {
        const user = rest.split(':')[0]!;
        if (user === 'root' || user === '0')
          throw new DockerfileError(`${where}: builds and machines never run as root: leave USER out, or name a non-root user`);
        break;
      }
      default:
        if (ignored.has(op)) break;
        throw new DockerfileError(
          `${where}: is not supported by the platform's builder (${['HEALTHCHECK', 'VOLUME', 'ONBUILD'].includes(op) ? 'declare it in x-svc or the app instead' : 'not a Dockerfile instruction it knows'})`,
        );
    }
  }
  if (!from) throw new DockerfileError(`${file}: has no FROM`);
  if (!entrypoint && !cmd) throw new DockerfileError(`${file}: has neither CMD nor ENTRYPOINT: nothing to start`);
  if (workdir === '/') throw new DockerfileError(`${file}: set a WORKDIR (such as /app): what the build makes there is the image's layer`);
  return { from, steps, workdir, env, entrypoint, cmd, port };
}
