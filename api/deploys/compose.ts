// Compose files as deploy input. An App is one container service, so a compose file describes at
// most one service with an image (its ports, environment, entrypoint and command); `x-svc` carries
// platform settings. A file with only `x-svc` creates no container service: it configures a files
// deploy. Anything we would silently ignore is refused instead, naming the key. The policy keys
// (`x-svc.auth`, `x-svc.identity`) are read by lib/policy, the parser shared with pages.
import { parseDocument } from 'yaml';
import { composePolicy, PolicyError, type Declaration } from '../../lib/policy/index.js';
import { maxVolumeName, maxVolumes, volumeNamePattern, volumePathProblem, type VolumeSpec } from '../../lib/volumes.js';
import { invalid } from '../errors.js';

export interface ComposeService {
  name: string;
  image: string;
  port?: number;
  env: Array<{ name: string; value: string }>;
  command?: string[];
  args?: string[];
}

export interface ComposeSettings {
  machines?: number;
}

/** A volume as x-svc.volumes declares it: where, and how large. */
interface VolumeSetting {
  path?: string;
  size?: string;
}

export interface Compose {
  /** The service's volumes (present, maybe empty, whenever there is a service: the file is the whole list). */
  service?: ComposeService & { volumes: VolumeSpec[] };
  settings: ComposeSettings;
  /** The file's authentication policy declarations (present when it declares any). */
  policy?: Declaration[];
}

const topLevelKeys = new Set(['version', 'name', 'services', 'volumes', 'x-svc']);
const serviceKeys = new Set(['image', 'ports', 'expose', 'environment', 'command', 'entrypoint', 'x-svc', 'restart', 'container_name', 'volumes']);
const xsvcKeys = new Set(['machines', 'auth', 'identity', 'volumes']);
const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Fields = Record<string, unknown>;
const isMap = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

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
  else if (typeof v === 'string') target = v.replace(/\/(tcp|udp)$/, '').split(':').at(-1);
  const n = typeof target === 'number' ? target : typeof target === 'string' && /^\d+$/.test(target) ? Number(target) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw invalid(`compose: ${where} is not a port (${JSON.stringify(v)})`);
  return n;
}

function environment(v: unknown, where: string): Array<{ name: string; value: string }> {
  const pairs: Array<[string, unknown]> = Array.isArray(v)
    ? v.map((item, i) => {
        if (typeof item !== 'string' || !item.includes('=')) throw invalid(`compose: ${where}[${i}] must be NAME=value`);
        const at = item.indexOf('=');
        return [item.slice(0, at), item.slice(at + 1)];
      })
    : isMap(v)
      ? Object.entries(v)
      : (() => {
          throw invalid(`compose: ${where} must be a map or a list of NAME=value`);
        })();
  return pairs.map(([name, value]) => {
    if (!envName.test(name)) throw invalid(`compose: ${where}.${name} is not an environment variable name`);
    // A bare name means "take it from the host" in compose; here there is no host environment.
    if (value === null || value === undefined) throw invalid(`compose: ${where}.${name} has no value (set it with the env API instead)`);
    if (!['string', 'number', 'boolean'].includes(typeof value)) throw invalid(`compose: ${where}.${name} must be a string, number or boolean`);
    return { name, value: String(value) };
  });
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
    for (const key of Object.keys(s)) if (key !== 'path' && key !== 'size') throw invalid(`compose: ${at}.${key} is not a volume setting (known: path, size)`);
    if (s.path !== undefined && typeof s.path !== 'string') throw invalid(`compose: ${at}.path must be a string`);
    if (s.size !== undefined && (typeof s.size !== 'string' || !/^[1-9][0-9]{0,5}(Mi|Gi|Ti)$/.test(s.size))) throw invalid(`compose: ${at}.size must be a size such as 512Mi, 1Gi or 1Ti`);
    out.set(name, { ...(s.path !== undefined ? { path: s.path as string } : {}), ...(s.size !== undefined ? { size: s.size as string } : {}) });
  }
  return out;
}

function volumeName(name: string, where: string): void {
  if (!volumeNamePattern.test(name) || name.length > maxVolumeName) throw invalid(`compose: ${where}: a volume name is 1-${maxVolumeName} lowercase letters, digits and -, starting and ending with a letter or digit`);
}

/** A service's `volumes:` entry, `name:/path` or `{type: volume, source, target}`: which named volume, where. */
function serviceVolume(v: unknown, where: string): { name: string; path: string } {
  let source: unknown;
  let target: unknown;
  if (typeof v === 'string') {
    const parts = v.split(':');
    if (parts.length === 1) throw invalid(`compose: ${where} (${v}) is an anonymous volume: name it (name:${v}) and declare it under the top-level volumes`);
    if (parts.length > 3 || (parts.length === 3 && parts[2] !== 'rw')) throw invalid(`compose: ${where} (${v}): only name:/path or name:/path:rw is supported`);
    [source, target] = parts;
  } else if (isMap(v)) {
    for (const key of Object.keys(v)) if (!['type', 'source', 'target'].includes(key)) throw invalid(`compose: ${where}.${key} is not supported (supported: type, source, target)`);
    if (v.type !== 'volume') throw invalid(`compose: ${where}.type must be volume (${String(v.type)} is not supported)`);
    source = v.source;
    target = v.target;
  } else throw invalid(`compose: ${where} must be name:/path or a map with type, source and target`);
  if (typeof source !== 'string' || /^[./~]/.test(source)) throw invalid(`compose: ${where}: ${String(source)} is a path on the host; machines mount named volumes only (name:/path)`);
  if (typeof target !== 'string') throw invalid(`compose: ${where}: the mount path is missing`);
  volumeName(source, where);
  return { name: source, path: target };
}

/**
 * The service's volumes: those it mounts (`volumes:`, each declared at the top level as compose
 * requires) and those `x-svc.volumes` declares, with their sizes. One list, the whole of it.
 */
function volumesOf(root: Fields, service: string, svc: Fields, xsvc: { value: unknown; where: string }): VolumeSpec[] {
  const where = `services.${service}`;
  const declared = root.volumes ?? {};
  if (!isMap(declared)) throw invalid('compose: top-level volumes must be a map of volume names');
  for (const [name, v] of Object.entries(declared)) {
    volumeName(name, `volumes.${name}`);
    if (v !== null && !(isMap(v) && Object.keys(v).length === 0)) throw invalid(`compose: volumes.${name} takes no options here (size it with x-svc.volumes.${name}.size)`);
  }
  const settings = volumeSettings(isMap(xsvc.value) ? xsvc.value.volumes : undefined, `${xsvc.where}.volumes`);
  if (svc.volumes !== undefined && !Array.isArray(svc.volumes)) throw invalid(`compose: ${where}.volumes must be a list`);
  const mounts: unknown[] = svc.volumes ?? [];
  const paths = new Map<string, string>();
  mounts.forEach((m, i) => {
    const { name, path } = serviceVolume(m, `${where}.volumes[${i}]`);
    if (!(name in declared)) throw invalid(`compose: ${where}.volumes[${i}] mounts ${name}, which the top-level volumes do not declare`);
    if (paths.has(name)) throw invalid(`compose: ${where} mounts volume ${name} twice`);
    paths.set(name, path);
  });
  const names = [...new Set([...paths.keys(), ...settings.keys()])];
  if (names.length > maxVolumes) throw invalid(`compose: ${where} has ${names.length} volumes; at most ${maxVolumes}`);
  const out = names.map((name) => {
    const s = settings.get(name);
    if (s?.path !== undefined && paths.has(name) && s.path !== paths.get(name)) throw invalid(`compose: volume ${name} is mounted at ${paths.get(name)} but x-svc.volumes.${name}.path says ${s.path}`);
    const path = paths.get(name) ?? s?.path;
    if (path === undefined) throw invalid(`compose: volume ${name} has no mount path (mount it in the service's volumes, or set x-svc.volumes.${name}.path)`);
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
  if (root.volumes !== undefined || (isMap(xsvc) && xsvc.volumes !== undefined)) throw invalid('compose: volumes belong to a container service; this file has none (only x-svc)');
}

function settings(v: unknown, where: string): ComposeSettings {
  if (v === undefined || v === null) return {};
  if (!isMap(v)) throw invalid(`compose: ${where} must be a map`);
  for (const key of Object.keys(v)) {
    if (!xsvcKeys.has(key)) throw invalid(`compose: ${where}.${key} is not a known setting (known: ${[...xsvcKeys].join(', ')})`);
  }
  const out: ComposeSettings = {};
  if (v.machines !== undefined) {
    if (!Number.isInteger(v.machines) || (v.machines as number) < 0 || (v.machines as number) > 20) throw invalid(`compose: ${where}.machines must be an integer 0-20`);
    out.machines = v.machines as number;
  }
  return out;
}

export function parseCompose(text: string): Compose {
  try {
    return parseComposeFile(text);
  } catch (err) {
    if (err instanceof PolicyError) throw invalid(err.message);
    throw err;
  }
}

const withPolicy = (c: Compose, policy: Declaration[]): Compose => (policy.length ? { ...c, policy } : c);

function parseComposeFile(text: string): Compose {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) throw invalid(`compose: ${doc.errors[0]!.message.split('\n')[0]}`);
  const root: unknown = doc.toJS();
  if (!isMap(root)) throw invalid('compose: the file must be a map with services and/or x-svc');
  for (const key of Object.keys(root)) {
    if (!topLevelKeys.has(key)) throw invalid(`compose: top-level ${key} is not supported (supported: ${[...topLevelKeys].join(', ')})`);
  }
  let top = settings(root['x-svc'], 'x-svc');
  const services = root.services ?? {};
  if (!isMap(services)) throw invalid('compose: services must be a map of service names to services');
  const names = Object.keys(services);
  if (names.length > 1) throw invalid(`compose: an app is one container service, found ${names.length} (${names.join(', ')}); deploy each as its own app`);
  if (!names.length) {
    if (root['x-svc'] === undefined) throw invalid('compose: the file has neither services nor x-svc');
    noVolumes(root, root['x-svc']);
    return withPolicy({ settings: top }, composePolicy(root['x-svc'], undefined));
  }
  const name = names[0]!;
  const svc = services[name];
  const where = `services.${name}`;
  if (!isMap(svc)) throw invalid(`compose: ${where} must be a map`);
  for (const key of Object.keys(svc)) {
    if (!serviceKeys.has(key)) throw invalid(`compose: ${where}.${key} is not supported${key === 'build' ? ' (deploy a prebuilt image, or the files themselves)' : ''}`);
  }
  // A service-level x-svc replaces the top-level one (the spec's rule for auth, kept for all keys).
  if (svc['x-svc'] !== undefined) top = settings(svc['x-svc'], `${where}.x-svc`);
  // Policies follow the spec's own rule: top-level auth is the default, a service-level auth replaces it.
  const policy = composePolicy(root['x-svc'], { name, xsvc: svc['x-svc'] });
  if (svc.image === undefined) {
    // Only x-svc: no container service.
    if (Object.keys(svc).every((k) => k === 'x-svc')) {
      noVolumes(root, svc['x-svc'] ?? root['x-svc']);
      return withPolicy({ settings: top }, policy);
    }
    throw invalid(`compose: ${where}.image is required (builds from a Dockerfile are not supported here)`);
  }
  if (typeof svc.image !== 'string' || !/^[a-zA-Z0-9][a-zA-Z0-9._/:@-]{0,511}$/.test(svc.image)) throw invalid(`compose: ${where}.image must be an image reference`);
  const ports = [...(Array.isArray(svc.ports) ? svc.ports : svc.ports === undefined ? [] : [svc.ports]), ...(Array.isArray(svc.expose) ? svc.expose : [])].map((p, i) =>
    containerPort(p, `${where}.ports[${i}]`),
  );
  const distinct = [...new Set(ports)];
  if (distinct.length > 1) throw invalid(`compose: ${where} exposes ${distinct.length} ports (${distinct.join(', ')}); an app serves HTTP on one`);
  return withPolicy({
    service: {
      name,
      image: svc.image,
      ...(distinct.length ? { port: distinct[0]! } : {}),
      env: svc.environment === undefined ? [] : environment(svc.environment, `${where}.environment`),
      ...(svc.entrypoint !== undefined ? { command: words(svc.entrypoint, `${where}.entrypoint`) } : {}),
      ...(svc.command !== undefined ? { args: words(svc.command, `${where}.command`) } : {}),
      volumes: volumesOf(root, name, svc, svc['x-svc'] !== undefined ? { value: svc['x-svc'], where: `${where}.x-svc` } : { value: root['x-svc'], where: 'x-svc' }),
    },
    settings: top,
  }, policy);
}
