// Compose files as deploy input. An App is one container service, so a compose file describes at
// most one service with an image (its ports, environment, entrypoint and command); `x-svc` carries
// platform settings. A file with only `x-svc` creates no container service: it configures a files
// deploy. Anything we would silently ignore is refused instead, naming the key. The policy keys
// (`x-svc.auth`, `x-svc.identity`) are read by lib/policy, the parser shared with pages.
import { parseDocument } from 'yaml';
import { composePolicy, PolicyError, type Declaration } from '../../lib/policy/index.js';
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

export interface Compose {
  service?: ComposeService;
  settings: ComposeSettings;
  /** The file's authentication policy declarations (present when it declares any). */
  policy?: Declaration[];
}

const topLevelKeys = new Set(['version', 'name', 'services', 'x-svc']);
const serviceKeys = new Set(['image', 'ports', 'expose', 'environment', 'command', 'entrypoint', 'x-svc', 'restart', 'container_name']);
const xsvcKeys = new Set(['machines', 'auth', 'identity']);
const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Map = Record<string, unknown>;
const isMap = (v: unknown): v is Map => typeof v === 'object' && v !== null && !Array.isArray(v);

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
    if (Object.keys(svc).every((k) => k === 'x-svc')) return withPolicy({ settings: top }, policy);
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
    },
    settings: top,
  }, policy);
}
