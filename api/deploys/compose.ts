// Compose files as deploy input (docs/api/compose.md lists every key). Each service of the file
// becomes a service of the app with machines of its own; exactly one, the public one, receives the
// app's hostname, and the others are reached by the app's machines by name only. `x-svc` carries
// platform settings. A file with only `x-svc` creates no container service: it configures a files
// deploy. Anything the platform would silently ignore is refused instead, naming the key. The
// policy keys (`x-svc.auth`, `x-svc.identity`) are read by lib/policy, the parser shared with pages.
import { parseDocument } from 'yaml';
import { composePolicy, PolicyError, type Declaration } from '../../lib/policy/index.js';
import { maxVolumeName, maxVolumes, volumeNamePattern, volumePathProblem, type VolumeSpec } from '../../lib/volumes.js';
import type { App } from '../../lib/resources/index.js';
import { invalid } from '../errors.js';

export type Restart = 'always' | 'on-failure' | 'no';
export type DependsCondition = 'started' | 'healthy' | 'completed';

/** compose `healthcheck` as the App spec holds it, every field set. */
export type Healthcheck = Required<NonNullable<App['spec']['healthcheck']>>;

export interface ComposeService {
  name: string;
  image: string;
  /** The public service's HTTP port; a private service's first port (its PORT). */
  port?: number;
  /** Every port it listens on for the app's other services (published and exposed). */
  ports: number[];
  env: Array<{ name: string; value: string }>;
  command?: string[];
  args?: string[];
  workingDir?: string;
  /** Its volumes (present, maybe empty: the file is the whole list). */
  volumes: VolumeSpec[];
  /** x-svc.machines or deploy.replicas, when the file says. */
  machines?: number;
  healthcheck?: Healthcheck;
  restart?: Restart;
  dependsOn: Array<{ service: string; condition: DependsCondition }>;
  /** container_name: one more name the app's machines reach it by. */
  aliases: string[];
}

export interface ComposeSettings {
  machines?: number;
}

export interface Compose {
  /** The file's services, the public one first; empty for a file of only `x-svc`. */
  services: ComposeService[];
  /** The public service's settings, or the file's for a file of only `x-svc`. */
  settings: ComposeSettings;
  /** The file's authentication policy declarations for the public service (present when it declares any). */
  policy?: Declaration[];
  /** The env_file paths the services read (files sent with the deploy). */
  envFiles: string[];
}

/** Files sent with the compose file (env_file reads them); undefined: none was sent. */
export type ComposeFiles = (path: string) => string | undefined;

const topLevelKeys = ['version', 'name', 'services', 'volumes', 'x-svc'];
const serviceKeys = [
  'image',
  'ports',
  'expose',
  'environment',
  'env_file',
  'command',
  'entrypoint',
  'working_dir',
  'restart',
  'depends_on',
  'healthcheck',
  'deploy',
  'container_name',
  'volumes',
  'x-svc',
];
const xsvcKeys = ['machines', 'auth', 'identity', 'volumes'];
const serviceXsvcKeys = [...xsvcKeys, 'public'];
/** Why some common keys are refused, beyond "not supported". */
const refusedWhy: Record<string, string> = {
  build: 'deploy a prebuilt image, or build the source with POST /builds',
  user: "machines always run as the platform's unprivileged user",
  privileged: 'machines never run privileged',
  cap_add: 'machines run with no capabilities',
  network_mode: "the app's services share the app's network",
  networks: "the app's services share the app's network; each reaches the others by name",
  links: "the app's services reach each other by name without links",
  extra_hosts: "the app's services reach each other by name",
  secrets: 'set secrets with the env API (PUT /apps/{app}/env)',
  configs: 'send config files with the deploy, or set them with the env API',
};
const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A service name becomes a host name the app's machines resolve, and part of object names. */
const serviceNamePattern = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const maxServiceName = 30;
export const maxServices = 11;

type Fields = Record<string, unknown>;
const isMap = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

function onlyKeys(v: Fields, known: readonly string[], where: string): void {
  for (const key of Object.keys(v)) {
    if (known.includes(key)) continue;
    const why = refusedWhy[key];
    throw invalid(`compose: ${where}.${key} is not supported${why ? ` (${why})` : ` (supported: ${known.join(', ')})`}`);
  }
}

function words(v: unknown, where: string): string[] {
  if (typeof v === 'string') {
    const parts = v.trim().split(/\s+/).filter(Boolean);
    if (!parts.length) throw invalid(`compose: ${where} is empty`);
    return parts;
  }
  if (Array.isArray(v) && v.length && v.every((x) => typeof x === 'string' || typeof x === 'number')) return v.map(String);
  throw invalid(`compose: ${where} must be a string or a list of strings`);
}

/** `8080`, `"80:8080"`, `"127.0.0.1:80:8080/tcp"` or `{target: 8080}`: the container side. */
function containerPort(v: unknown, where: string): number {
  let target: unknown = v;
  if (isMap(v)) target = v.target;
  else if (typeof v === 'string') {
    if (/\/udp$/.test(v)) throw invalid(`compose: ${where} (${v}) is a UDP port; services speak TCP here`);
    target = v
      .replace(/\/tcp$/, '')
      .split(':')
      .at(-1);
  }
  const n = typeof target === 'number' ? target : typeof target === 'string' && /^\d+$/.test(target) ? Number(target) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw invalid(`compose: ${where} is not a port (${JSON.stringify(v)})`);
  return n;
}

function portList(v: unknown, where: string): number[] {
  if (v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  return list.map((p, i) => containerPort(p, `${where}[${i}]`));
}

function envPairs(pairs: Array<[string, unknown]>, where: string): Array<{ name: string; value: string }> {
  return pairs.map(([name, value]) => {
    if (!envName.test(name)) throw invalid(`compose: ${where}.${name} is not an environment variable name`);
    // A bare name means "take it from the host" in compose; here there is no host environment.
    if (value === null || value === undefined) throw invalid(`compose: ${where}.${name} has no value (set it with the env API instead)`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      throw invalid(`compose: ${where}.${name} must be a string, number or boolean`);
    return { name, value: String(value) };
  });
}

function environment(v: unknown, where: string): Array<{ name: string; value: string }> {
  if (Array.isArray(v)) {
    return envPairs(
      v.map((item, i) => {
        if (typeof item !== 'string' || !item.includes('=')) throw invalid(`compose: ${where}[${i}] must be NAME=value`);
        const at = item.indexOf('=');
        return [item.slice(0, at), item.slice(at + 1)];
      }),
      where,
    );
  }
  if (isMap(v)) return envPairs(Object.entries(v), where);
  throw invalid(`compose: ${where} must be a map or a list of NAME=value`);
}

/** One env file's variables, as compose reads them: NAME=value lines, # comments, quoted values. */
export function parseEnvFile(text: string, where: string): Array<{ name: string; value: string }> {
  const out: Array<[string, unknown]> = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([^=\s]+)\s*=\s*(.*)$/.exec(line);
    if (!m) throw invalid(`compose: ${where} line ${i + 1} is not NAME=value`);
    let value = m[2]!;
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.length >= 2 && value.endsWith(quote)) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    } else value = value.replace(/\s+#.*$/, '');
    out.push([m[1]!, value]);
  });
  return envPairs(out, where);
}

/** `env_file`: a path, a list of paths, or of `{path, required}`, read from the files sent with the deploy. */
function envFiles(v: unknown, where: string, files: ComposeFiles | undefined, read: string[]): Array<{ name: string; value: string }> {
  const list = Array.isArray(v) ? v : [v];
  return list.flatMap((item, i) => {
    const at = `${where}[${i}]`;
    let path: unknown = item;
    let required = true;
    if (isMap(item)) {
      onlyKeys(item, ['path', 'required'], at);
      path = item.path;
      if (item.required !== undefined && typeof item.required !== 'boolean') throw invalid(`compose: ${at}.required must be true or false`);
      required = item.required !== false;
    }
    if (typeof path !== 'string' || !path) throw invalid(`compose: ${at} must be a path, or a map with path`);
    const clean = path.replace(/^\.\//, '');
    const text = files?.(clean);
    if (text === undefined) {
      if (!required) return [];
      throw invalid(`compose: ${at}: ${path} was not sent with the deploy (send it in files, or put its variables under environment)`);
    }
    read.push(clean);
    return parseEnvFile(text, `${at} (${path})`);
  });
}

/** A compose duration (`1m30s`, `10s`, `500ms`) in whole seconds, rounded up. */
function seconds(v: unknown, where: string): number {
  if (typeof v !== 'string' || !/^(\d+(\.\d+)?(h|m|s|ms|us|ns))+$/.test(v))
    throw invalid(`compose: ${where} must be a duration such as 10s, 1m30s or 500ms`);
  const unit = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 } as const;
  let total = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|ns)/g)) total += Number(m[1]) * unit[m[2] as keyof typeof unit];
  return Math.ceil(total);
}

/** compose `healthcheck` as a readiness check; undefined when it is disabled. */
function healthcheck(v: unknown, where: string): Healthcheck | undefined {
  if (!isMap(v)) throw invalid(`compose: ${where} must be a map`);
  onlyKeys(v, ['test', 'interval', 'timeout', 'retries', 'start_period', 'disable'], where);
  if (v.disable === true) return undefined;
  if (v.disable !== undefined && v.disable !== false) throw invalid(`compose: ${where}.disable must be true or false`);
  let command: Healthcheck['command'];
  const test = v.test;
  if (typeof test === 'string') command = ['/bin/sh', '-c', test];
  else if (Array.isArray(test) && test.length && test.every((x) => typeof x === 'string')) {
    const [form, first, ...rest] = test;
    if (form === 'NONE') return undefined;
    if (form === 'CMD' && first !== undefined) command = [first, ...rest];
    else if (form === 'CMD-SHELL' && first !== undefined && !rest.length) command = ['/bin/sh', '-c', first];
    else throw invalid(`compose: ${where}.test must be ["CMD", ...], ["CMD-SHELL", "command"], ["NONE"] or a string`);
  } else throw invalid(`compose: ${where}.test is required: ["CMD", ...], ["CMD-SHELL", "command"] or a string`);
  const intOf = (x: unknown, at: string, min: number, max: number): number => {
    if (!Number.isInteger(x) || (x as number) < min || (x as number) > max)
      throw invalid(`compose: ${at} must be an integer ${min}-${max}`);
    return x as number;
  };
  // Compose's defaults, except that the interval and timeout are at least a second (Kubernetes' unit).
  return {
    command,
    intervalSeconds: Math.max(1, v.interval === undefined ? 30 : seconds(v.interval, `${where}.interval`)),
    timeoutSeconds: Math.max(1, v.timeout === undefined ? 30 : seconds(v.timeout, `${where}.timeout`)),
    retries: v.retries === undefined ? 3 : intOf(v.retries, `${where}.retries`, 1, 100),
    startPeriodSeconds: v.start_period === undefined ? 0 : seconds(v.start_period, `${where}.start_period`),
  };
}

function restart(v: unknown, where: string): Restart {
  if (v === 'always' || v === 'unless-stopped') return 'always';
  if (v === 'on-failure' || v === 'no' || v === false) return v === false ? 'no' : v;
  if (typeof v === 'string' && /^on-failure:\d+$/.test(v))
    throw invalid(`compose: ${where} (${v}): a number of retries is not supported; use on-failure`);
  throw invalid(`compose: ${where} must be always, unless-stopped, on-failure or "no"`);
}

function dependsOn(v: unknown, where: string): Array<{ service: string; condition: DependsCondition }> {
  const conditions: Record<string, DependsCondition> = {
    service_started: 'started',
    service_healthy: 'healthy',
    service_completed_successfully: 'completed',
  };
  if (Array.isArray(v)) {
    return v.map((name, i) => {
      if (typeof name !== 'string') throw invalid(`compose: ${where}[${i}] must be a service name`);
      return { service: name, condition: 'started' };
    });
  }
  if (!isMap(v)) throw invalid(`compose: ${where} must be a list of service names or a map of service names to {condition}`);
  return Object.entries(v).map(([service, spec]) => {
    const at = `${where}.${service}`;
    if (!isMap(spec)) throw invalid(`compose: ${at} must be a map with condition`);
    onlyKeys(spec, ['condition', 'required'], at);
    if (spec.required !== undefined && spec.required !== true)
      throw invalid(`compose: ${at}.required: only true (the default) is supported`);
    const condition =
      spec.condition === undefined ? 'started' : typeof spec.condition === 'string' ? conditions[spec.condition] : undefined;
    if (!condition) throw invalid(`compose: ${at}.condition must be one of ${Object.keys(conditions).join(', ')}`);
    return { service, condition };
  });
}

/** `deploy`: only `replicas` (the machines) is honoured here. */
function replicas(v: unknown, where: string): number | undefined {
  if (!isMap(v)) throw invalid(`compose: ${where} must be a map`);
  onlyKeys(v, ['replicas'], where);
  if (v.replicas === undefined) return undefined;
  if (!Number.isInteger(v.replicas) || (v.replicas as number) < 0 || (v.replicas as number) > 20)
    throw invalid(`compose: ${where}.replicas must be an integer 0-20`);
  return v.replicas as number;
}

/** A volume as x-svc.volumes declares it: where, and how large. */
interface VolumeSetting {
  path?: string;
  size?: string;
}

/** `x-svc.volumes`: a map of volume names to `{path, size}`. */
function volumeSettings(v: unknown, where: string): Map<string, VolumeSetting> {
  const out = new Map<string, VolumeSetting>();
  if (v === undefined || v === null) return out;
  if (!isMap(v)) throw invalid(`compose: ${where} must be a map of volume names to {path, size}`);
  for (const [name, setting] of Object.entries(v)) {
    const at = `${where}.${name}`;
    volumeName(name, at);
    if (setting !== null && !isMap(setting)) throw invalid(`compose: ${at} must be a map with path and/or size`);
    const s = setting ?? {};
    for (const key of Object.keys(s))
      if (key !== 'path' && key !== 'size') throw invalid(`compose: ${at}.${key} is not a volume setting (known: path, size)`);
    if (s.path !== undefined && typeof s.path !== 'string') throw invalid(`compose: ${at}.path must be a string`);
    if (s.size !== undefined && (typeof s.size !== 'string' || !/^[1-9][0-9]{0,5}(Mi|Gi|Ti)$/.test(s.size)))
      throw invalid(`compose: ${at}.size must be a size such as 512Mi, 1Gi or 1Ti`);
    out.set(name, { ...(s.path !== undefined ? { path: s.path } : {}), ...(s.size !== undefined ? { size: s.size } : {}) });
  }
  return out;
}

function volumeName(name: string, where: string): void {
  if (!volumeNamePattern.test(name) || name.length > maxVolumeName)
    throw invalid(
      `compose: ${where}: a volume name is 1-${maxVolumeName} lowercase letters, digits and -, starting and ending with a letter or digit`,
    );
}

/** A service's `volumes:` entry, `name:/path` or `{type: volume, source, target}`: which named volume, where. */
function serviceVolume(v: unknown, where: string): { name: string; path: string } {
  let source: unknown;
  let target: unknown;
  if (typeof v === 'string') {
    const parts = v.split(':');
    if (parts.length === 1)
      throw invalid(`compose: ${where} (${v}) is an anonymous volume: name it (name:${v}) and declare it under the top-level volumes`);
    if (parts.length > 3 || (parts.length === 3 && parts[2] !== 'rw'))
      throw invalid(`compose: ${where} (${v}): only name:/path or name:/path:rw is supported`);
    [source, target] = parts;
  } else if (isMap(v)) {
    onlyKeys(v, ['type', 'source', 'target'], where);
    if (v.type !== 'volume') throw invalid(`compose: ${where}.type must be volume (${String(v.type)} is not supported)`);
    source = v.source;
    target = v.target;
  } else throw invalid(`compose: ${where} must be name:/path or a map with type, source and target`);
  if (typeof source !== 'string' || /^[./~]/.test(source))
    throw invalid(`compose: ${where}: ${String(source)} is a path on the host; machines mount named volumes only (name:/path)`);
  if (typeof target !== 'string') throw invalid(`compose: ${where}: the mount path is missing`);
  volumeName(source, where);
  return { name: source, path: target };
}

/** The top-level `volumes`: names only (sizes go in x-svc.volumes). */
function declaredVolumes(root: Fields): Set<string> {
  const declared = root.volumes ?? {};
  if (!isMap(declared)) throw invalid('compose: top-level volumes must be a map of volume names');
  for (const [name, v] of Object.entries(declared)) {
    volumeName(name, `volumes.${name}`);
    if (v !== null && !(isMap(v) && Object.keys(v).length === 0))
      throw invalid(`compose: volumes.${name} takes no options here (size it with x-svc.volumes.${name}.size)`);
  }
  return new Set(Object.keys(declared));
}

/**
 * A service's volumes: those it mounts (`volumes:`, each declared at the top level as compose
 * requires), with the sizes and paths `x-svc.volumes` gives them (the service's, else the file's);
 * `unmounted` are the file's `x-svc.volumes` with a path no service mounts, which a file of one
 * service gives that service. One list, the whole of it.
 */
function volumesOf(
  declared: Set<string>,
  service: string,
  svc: Fields,
  settings: Map<string, VolumeSetting>,
  unmounted: string[],
): VolumeSpec[] {
  const where = `services.${service}`;
  if (svc.volumes !== undefined && !Array.isArray(svc.volumes)) throw invalid(`compose: ${where}.volumes must be a list`);
  const mounts: unknown[] = svc.volumes ?? [];
  const paths = new Map<string, string>();
  mounts.forEach((m, i) => {
    const { name, path } = serviceVolume(m, `${where}.volumes[${i}]`);
    if (!declared.has(name)) throw invalid(`compose: ${where}.volumes[${i}] mounts ${name}, which the top-level volumes do not declare`);
    if (paths.has(name)) throw invalid(`compose: ${where} mounts volume ${name} twice`);
    paths.set(name, path);
  });
  const names = [...new Set([...paths.keys(), ...unmounted])];
  if (names.length > maxVolumes) throw invalid(`compose: ${where} has ${names.length} volumes; at most ${maxVolumes}`);
  const out = names.map((name) => {
    const s = settings.get(name);
    if (s?.path !== undefined && paths.has(name) && s.path !== paths.get(name))
      throw invalid(`compose: volume ${name} is mounted at ${paths.get(name)} but x-svc.volumes.${name}.path says ${s.path}`);
    const path = paths.get(name) ?? s?.path;
    if (path === undefined)
      throw invalid(`compose: volume ${name} has no mount path (mount it in the service's volumes, or set x-svc.volumes.${name}.path)`);
    const problem = volumePathProblem(path);
    if (problem) throw invalid(`compose: volume ${name}: its path ${path} ${problem}`);
    return { name, path, ...(s?.size ? { size: s.size } : {}) };
  });
  const byPath = new Map(out.map((v) => [v.path, v.name]));
  if (byPath.size !== out.length) throw invalid(`compose: ${where}: two volumes share a mount path`);
  return out;
}

/** Volumes are a container service's: a file that configures files refuses them, by name. */
function noVolumes(root: Fields, xsvc: unknown): void {
  if (root.volumes !== undefined || (isMap(xsvc) && xsvc.volumes !== undefined))
    throw invalid('compose: volumes belong to a container service; this file has none (only x-svc)');
}

function machinesSetting(v: unknown, where: string): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > 20) throw invalid(`compose: ${where} must be an integer 0-20`);
  return v as number;
}

function xsvcOf(v: unknown, where: string, known: readonly string[]): Fields | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isMap(v)) throw invalid(`compose: ${where} must be a map`);
  for (const key of Object.keys(v)) {
    if (!known.includes(key)) throw invalid(`compose: ${where}.${key} is not a known setting (known: ${known.join(', ')})`);
  }
  return v;
}

/**
 * Compose's interpolation: `$$` is a literal `$`; `$NAME` and `${NAME}` take the deploying host's
 * environment, which a platform deploy has none of, so they are refused rather than left as text.
 */
function interpolated(v: unknown, where: string): unknown {
  if (typeof v === 'string') {
    const m = /(?<!\$)(?:\$\$)*\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*)/.exec(v);
    if (m)
      throw invalid(
        `compose: ${where || 'the file'}: ${m[0].replace(/^(\$\$)*/, '')} takes a variable from the deploying environment, which a deploy has none of (set it with the env API, or write $$ for a literal $)`,
      );
    return v.replace(/\$\$/g, '$');
  }
  if (Array.isArray(v)) return v.map((x, i) => interpolated(x, `${where}[${i}]`));
  if (isMap(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolated(x, where ? `${where}.${k}` : k)]));
  return v;
}

export function parseCompose(text: string, files?: ComposeFiles): Compose {
  try {
    return parseComposeFile(text, files);
  } catch (err) {
    if (err instanceof PolicyError) throw invalid(err.message);
    throw err;
  }
}

const withPolicy = (c: Compose, policy: Declaration[]): Compose => (policy.length ? { ...c, policy } : c);

/** The service receiving the app's hostname: marked x-svc.public, else the one publishing a port, else the only one. */
function publicService(services: Array<{ name: string; svc: Fields; xsvc: Fields | undefined }>): string {
  const marked = services.filter((s) => s.xsvc?.public === true);
  for (const s of services) {
    if (s.xsvc?.public !== undefined && typeof s.xsvc.public !== 'boolean')
      throw invalid(`compose: services.${s.name}.x-svc.public must be true or false`);
  }
  if (marked.length > 1)
    throw invalid(
      `compose: services ${marked.map((s) => s.name).join(' and ')} are both marked x-svc.public; one service receives the app's hostname`,
    );
  if (marked.length === 1) return marked[0]!.name;
  if (services.length === 1) return services[0]!.name;
  const publishing = services.filter((s) => s.svc.ports !== undefined);
  if (publishing.length === 1) return publishing[0]!.name;
  const names = (publishing.length ? publishing : services).map((s) => s.name).join(', ');
  throw invalid(
    publishing.length
      ? `compose: services ${names} all publish a port; one service receives the app's hostname: mark it with x-svc.public: true`
      : `compose: none of the services ${names} publishes a port; publish the port of the one that receives the app's hostname (ports:), or mark it with x-svc.public: true`,
  );
}

/** depends_on names services of the file, never itself, in no cycle, with what its condition needs. */
function checkDependencies(services: ComposeService[], publicName: string): void {
  const byName = new Map(services.map((s) => [s.name, s]));
  for (const s of services) {
    for (const d of s.dependsOn) {
      const dep = byName.get(d.service);
      const at = `services.${s.name}.depends_on.${d.service}`;
      if (!dep) throw invalid(`compose: ${at}: the file has no service ${d.service}`);
      if (dep === s) throw invalid(`compose: ${at}: a service cannot depend on itself`);
      if (d.condition === 'healthy' && !dep.healthcheck)
        throw invalid(`compose: ${at}: service_healthy needs a healthcheck on ${d.service}`);
      if (d.condition === 'completed' && (dep.restart ?? 'always') === 'always')
        throw invalid(`compose: ${at}: service_completed_successfully needs ${d.service} to end (restart: "no" or on-failure)`);
    }
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting')
      throw invalid(`compose: depends_on has a cycle: ${[...path.slice(path.indexOf(name)), name].join(' -> ')}`);
    state.set(name, 'visiting');
    for (const d of byName.get(name)!.dependsOn) visit(d.service, [...path, name]);
    state.set(name, 'done');
  };
  for (const s of services) visit(s.name, []);
  const pub = byName.get(publicName)!;
  if ((pub.restart ?? 'always') !== 'always')
    throw invalid(`compose: services.${publicName}.restart: the service receiving the app's hostname always restarts (restart: always)`);
}

function parseComposeFile(text: string, files: ComposeFiles | undefined): Compose {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) throw invalid(`compose: ${doc.errors[0]!.message.split('\n')[0]}`);
  const root: unknown = interpolated(doc.toJS(), '');
  if (!isMap(root)) throw invalid('compose: the file must be a map with services and/or x-svc');
  for (const key of Object.keys(root)) {
    if (!topLevelKeys.includes(key))
      throw invalid(
        `compose: top-level ${key} is not supported${refusedWhy[key] ? ` (${refusedWhy[key]})` : ` (supported: ${topLevelKeys.join(', ')})`}`,
      );
  }
  const topXsvc = xsvcOf(root['x-svc'], 'x-svc', xsvcKeys);
  const topMachines = machinesSetting(topXsvc?.machines, 'x-svc.machines');
  const services = root.services ?? {};
  if (!isMap(services)) throw invalid('compose: services must be a map of service names to services');
  const entries = Object.entries(services).map(([name, svc]) => {
    const where = `services.${name}`;
    if (!isMap(svc)) throw invalid(`compose: ${where} must be a map`);
    return { name, svc, xsvc: xsvcOf(svc['x-svc'], `${where}.x-svc`, serviceXsvcKeys) };
  });
  // Only x-svc (rule 5): no container service; the file configures the files deployed with it.
  const onlyXsvc = (e: (typeof entries)[number]) => Object.keys(e.svc).every((k) => k === 'x-svc');
  if (!entries.length || (entries.length === 1 && onlyXsvc(entries[0]!))) {
    if (root['x-svc'] === undefined && !entries.length) throw invalid('compose: the file has neither services nor x-svc');
    const only = entries[0];
    noVolumes(root, only?.svc['x-svc'] ?? root['x-svc']);
    const machines = machinesSetting(only?.xsvc?.machines, `services.${only?.name}.x-svc.machines`) ?? topMachines;
    return withPolicy(
      { services: [], settings: machines !== undefined ? { machines } : {}, envFiles: [] },
      composePolicy(root['x-svc'], only ? { name: only.name, xsvc: only.svc['x-svc'] } : undefined),
    );
  }
  if (entries.length > maxServices) throw invalid(`compose: ${entries.length} services; an app has at most ${maxServices}`);
  for (const e of entries) {
    if (!serviceNamePattern.test(e.name) || e.name.length > maxServiceName) {
      throw invalid(
        `compose: services.${e.name}: a service name here is 1-${maxServiceName} lowercase letters, digits and -, starting with a letter (the app's machines reach the service by it as a host name)`,
      );
    }
    onlyKeys(e.svc, serviceKeys, `services.${e.name}`);
    if (e.svc.image === undefined) {
      throw invalid(
        onlyXsvc(e)
          ? `compose: services.${e.name} has only x-svc: a file with other services gives each an image`
          : `compose: services.${e.name}.image is required (build images with POST /builds)`,
      );
    }
  }
  const publicName = publicService(entries);
  const declared = declaredVolumes(root);
  const topVolumes = volumeSettings(topXsvc?.volumes, 'x-svc.volumes');
  const read: string[] = [];
  const parsed = entries.map(({ name, svc, xsvc }) => {
    const where = `services.${name}`;
    if (typeof svc.image !== 'string' || !/^[a-zA-Z0-9][a-zA-Z0-9._/:@-]{0,511}$/.test(svc.image))
      throw invalid(`compose: ${where}.image must be an image reference`);
    // Policies belong to the public service: nothing else is reached from outside to be gated.
    if (name !== publicName && xsvc && ('auth' in xsvc || 'identity' in xsvc)) {
      throw invalid(
        `compose: ${where}.x-svc.${'auth' in xsvc ? 'auth' : 'identity'}: ${name} does not receive the app's hostname (${publicName} does), so no request to it passes the sign-in gate; declare the policy on ${publicName} or at the top level`,
      );
    }
    const published = portList(svc.ports, `${where}.ports`);
    const exposed = portList(svc.expose, `${where}.expose`);
    const ports = [...new Set([...published, ...exposed])];
    const settings = xsvc?.volumes !== undefined ? volumeSettings(xsvc.volumes, `${where}.x-svc.volumes`) : topVolumes;
    // x-svc.volumes entries with a path and no mount: the service's own when it says them, or the only service's.
    const unmounted =
      xsvc?.volumes !== undefined || entries.length === 1 ? [...settings].filter(([, v]) => v.path !== undefined).map(([n]) => n) : [];
    const machines = machinesSetting(xsvc?.machines, `${where}.x-svc.machines`);
    const deployReplicas = svc.deploy !== undefined ? replicas(svc.deploy, `${where}.deploy`) : undefined;
    if (machines !== undefined && deployReplicas !== undefined && machines !== deployReplicas)
      throw invalid(`compose: ${where}: x-svc.machines (${machines}) and deploy.replicas (${deployReplicas}) disagree`);
    // x-svc.machines at the top is every service's default.
    const count = machines ?? deployReplicas ?? topMachines;
    const check = svc.healthcheck !== undefined ? healthcheck(svc.healthcheck, `${where}.healthcheck`) : undefined;
    if (
      svc.container_name !== undefined &&
      (typeof svc.container_name !== 'string' || !serviceNamePattern.test(svc.container_name) || svc.container_name.length > 63)
    ) {
      throw invalid(
        `compose: ${where}.container_name must be a host name (lowercase letters, digits and -, starting with a letter): the app's machines reach the service by it too`,
      );
    }
    if (svc.working_dir !== undefined && (typeof svc.working_dir !== 'string' || !svc.working_dir.startsWith('/')))
      throw invalid(`compose: ${where}.working_dir must be an absolute path`);
    const env = [
      ...(svc.env_file !== undefined ? envFiles(svc.env_file, `${where}.env_file`, files, read) : []),
      ...(svc.environment !== undefined ? environment(svc.environment, `${where}.environment`) : []),
    ];
    // environment wins over env_file, a later file over an earlier one (compose's order).
    const merged = [...new Map(env.map((e) => [e.name, e])).values()];
    const port = name === publicName ? (published[0] ?? exposed[0]) : ports[0];
    const service: ComposeService = {
      name,
      image: svc.image,
      ...(port !== undefined ? { port } : {}),
      ports,
      env: merged,
      ...(svc.entrypoint !== undefined ? { command: words(svc.entrypoint, `${where}.entrypoint`) } : {}),
      ...(svc.command !== undefined ? { args: words(svc.command, `${where}.command`) } : {}),
      ...(svc.working_dir !== undefined ? { workingDir: svc.working_dir } : {}),
      volumes: volumesOf(declared, name, svc, settings, unmounted),
      ...(count !== undefined ? { machines: count } : {}),
      ...(check ? { healthcheck: check } : {}),
      ...(svc.restart !== undefined ? { restart: restart(svc.restart, `${where}.restart`) } : {}),
      dependsOn: svc.depends_on !== undefined ? dependsOn(svc.depends_on, `${where}.depends_on`) : [],
      aliases: svc.container_name !== undefined && svc.container_name !== name ? [svc.container_name] : [],
    };
    return service;
  });
  // A volume is per machine (each machine has its own claim), so it belongs to one service.
  const owner = new Map<string, string>();
  for (const s of parsed) {
    for (const v of s.volumes) {
      const other = owner.get(v.name);
      if (other)
        throw invalid(
          `compose: volume ${v.name} is mounted by ${other} and ${s.name}; a volume belongs to one service (each machine has its own copy)`,
        );
      owner.set(v.name, s.name);
    }
  }
  // Every x-svc.volumes entry sizes or places a volume some service has.
  const settled = [...topVolumes.keys(), ...entries.flatMap((e) => (isMap(e.xsvc?.volumes) ? Object.keys(e.xsvc.volumes) : []))];
  const unowned = [...new Set(settled.filter((n) => !owner.has(n)))];
  if (unowned.length)
    throw invalid(
      `compose: x-svc.volumes ${unowned.join(', ')}: mounted by no service (mount ${unowned.length > 1 ? 'each' : 'it'} in a service's volumes, or give it a path)`,
    );
  const names = new Map<string, string>();
  for (const s of parsed) {
    for (const n of [s.name, ...s.aliases]) {
      if (names.has(n) && names.get(n) !== s.name) throw invalid(`compose: services ${names.get(n)} and ${s.name} both answer to ${n}`);
      names.set(n, s.name);
    }
  }
  checkDependencies(parsed, publicName);
  const pub = parsed.find((s) => s.name === publicName)!;
  const ordered = [pub, ...parsed.filter((s) => s !== pub)];
  const pubEntry = entries.find((e) => e.name === publicName)!;
  return withPolicy(
    { services: ordered, settings: pub.machines !== undefined ? { machines: pub.machines } : {}, envFiles: [...new Set(read)] },
    composePolicy(root['x-svc'], { name: publicName, xsvc: pubEntry.svc['x-svc'] }),
  );
}
