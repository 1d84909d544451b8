// Which registries a tenant's image may come from (issue 30 finding 6). An image reference is
// tenant input that the node's containerd acts on from the host's network namespace: a registry
// host of 127.0.0.1:8082 made containerd connect to the controllers' port, and its pull error told
// an open port from a closed one. So every image a tenant names (a deploy, a compose service, an
// App applied with kubectl) is parsed here the way containerd and docker parse it, and its registry
// host refused when it is not a public one, whatever the spelling; an operator may narrow the
// registries further with an allow-list (SVC_IMAGE_REGISTRIES). The platform's own registry
// (SVC_BUILD_REGISTRY) stays allowed: the operator configured it, and built images live there.
import { isIP } from 'node:net';

/** An image reference as containerd reads it (docker's normalisation: docker.io, library/). */
export interface ImageReference {
  /** host[:port] as containerd will connect to it, lowercased, no trailing dot; `docker.io` for Docker Hub. */
  readonly registry: string;
  /** The host alone (an IPv6 literal without its brackets). */
  readonly host: string;
  readonly port: number | undefined;
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
}

export class ImageReferenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageReferenceError';
  }
}

// docker/distribution's reference grammar (reference/regexp.go).
const pathComponent = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestPattern = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
const domainComponent = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const dockerHub = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/**
 * Parses `ref` as containerd does (ParseDockerRef): the first path component is a registry only
 * when it has a `.` or `:`, is `localhost`, or has an uppercase letter; otherwise the image is
 * Docker Hub's (a single name under `library/`). Hosts are returned lowercased without a trailing
 * dot, so that the policy judges what the resolver would be asked, not the spelling.
 */
export function parseImageReference(ref: string): ImageReference {
  if (ref.length === 0 || ref.length > 512) throw new ImageReferenceError('is not an image reference (1 to 512 characters)');
  if (/[\s\u0000-\u001f\u007f]/.test(ref)) throw new ImageReferenceError('is not an image reference (it has spaces or control characters)');
  // A digest alone (`sha256:<hex>`) reads as Docker Hub's `library/sha256` at a tag, but the node's
  // containerd takes it as an image ID and starts whatever image it has cached under that ID,
  // another account's included, without pulling: a reference must name its repository.
  if (digestPattern.test(ref))
    throw new ImageReferenceError(
      'is not an image reference (a digest alone names an image ID; name its repository, like repo@sha256:<hex>)',
    );
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    // Not userinfo: in an image reference `@` only introduces a digest (sha256:<hex>).
    if (!digestPattern.test(digest))
      throw new ImageReferenceError('is not an image reference (an @ may only introduce a digest, like @sha256:<64 hex digits>)');
  }
  const slash = rest.indexOf('/');
  const first = slash < 0 ? undefined : rest.slice(0, slash);
  const isDomain =
    first !== undefined && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase() || first.startsWith('['));
  let registry = 'docker.io';
  let host = 'docker.io';
  let port: number | undefined;
  let remainder = rest;
  if (isDomain) {
    remainder = rest.slice(slash + 1);
    const m = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(first);
    if (!m) throw new ImageReferenceError(`is not an image reference (${first} is not a registry host[:port])`);
    host = m[1]!
      .replace(/^\[|\]$/g, '')
      .toLowerCase()
      .replace(/\.+$/, '');
    if (m[2] !== undefined) {
      port = Number(m[2]);
      if (port < 1 || port > 65535) throw new ImageReferenceError(`is not an image reference (${first} has no valid port)`);
    }
    const shown = m[1]!.startsWith('[') ? `[${host}]` : host;
    registry = dockerHub.has(host) && port === undefined ? 'docker.io' : port !== undefined ? `${shown}:${port}` : shown;
    if (dockerHub.has(host) && port === undefined) host = 'docker.io';
  }
  let tag: string | undefined;
  const colon = remainder.lastIndexOf(':');
  if (colon >= 0) {
    tag = remainder.slice(colon + 1);
    remainder = remainder.slice(0, colon);
    if (!tagPattern.test(tag)) throw new ImageReferenceError(`is not an image reference (tag ${JSON.stringify(tag)})`);
  }
  const parts = remainder.split('/');
  if (!remainder || !parts.every((p) => pathComponent.test(p))) {
    throw new ImageReferenceError('is not an image reference (a repository path is lowercase letters, digits and . _ - separated by /)');
  }
  const repository = registry === 'docker.io' && parts.length === 1 ? `library/${remainder}` : remainder;
  return Object.freeze({ registry, host, port, repository, tag, digest });
}

/** A registry host that is not a public one, and why (the rule a refusal names). */
type HostRule = 'loopback' | 'link-local' | 'private' | 'unique-local' | 'unspecified' | 'non-public' | 'local-name';

const ranges4: ReadonlyArray<readonly [string, number, HostRule, string]> = [
  ['0.0.0.0', 8, 'unspecified', 'an unspecified ("this network") address'],
  ['127.0.0.0', 8, 'loopback', 'a loopback address'],
  ['169.254.0.0', 16, 'link-local', 'a link-local address (cloud metadata lives there)'],
  ['10.0.0.0', 8, 'private', 'a private address'],
  ['172.16.0.0', 12, 'private', 'a private address'],
  ['192.168.0.0', 16, 'private', 'a private address'],
  ['100.64.0.0', 10, 'private', 'a shared (carrier-grade NAT) address'],
  ['192.0.0.0', 24, 'non-public', 'an IETF protocol address'],
  ['192.0.2.0', 24, 'non-public', 'a documentation address'],
  ['198.51.100.0', 24, 'non-public', 'a documentation address'],
  ['203.0.113.0', 24, 'non-public', 'a documentation address'],
  ['192.88.99.0', 24, 'non-public', 'a 6to4 relay address'],
  ['198.18.0.0', 15, 'non-public', 'a benchmarking address'],
  ['224.0.0.0', 4, 'non-public', 'a multicast address'],
  ['240.0.0.0', 4, 'non-public', 'a reserved address'],
];

function v4ToInt(a: string): number {
  return a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

function in4(address: string, net: string, prefix: number): boolean {
  const size = 2 ** (32 - prefix);
  return Math.floor(v4ToInt(address) / size) === Math.floor(v4ToInt(net) / size);
}

/** The 8 groups of an IPv6 address node:net accepts (embedded IPv4 tails included). */
function v6Groups(address: string): number[] {
  let a = address.replace(/%.*$/, '');
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (tail) {
    const n = v4ToInt(tail[1]!);
    a = `${a.slice(0, -tail[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = a.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const fill = rest === undefined ? [] : Array<string>(8 - h.length - r.length).fill('0');
  return [...h, ...fill, ...r].map((g) => parseInt(g, 16));
}

function classify4(address: string): { rule: HostRule; what: string } | undefined {
  const hit = ranges4.find(([net, prefix]) => in4(address, net, prefix));
  return hit ? { rule: hit[2], what: hit[3] } : undefined;
}

function classify6(address: string): { rule: HostRule; what: string } | undefined {
  const g = v6Groups(address);
  const zeroUntil = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (g.every((x) => x === 0)) return { rule: 'unspecified', what: 'the unspecified address' };
  if (zeroUntil(7) && g[7] === 1) return { rule: 'loopback', what: 'a loopback address' };
  // IPv4 inside IPv6 (mapped, compatible, translated, NAT64, 6to4, Teredo): judged as the IPv4 it carries.
  const embedded = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (
    (zeroUntil(5) && (g[5] === 0xffff || g[5] === 0)) ||
    (zeroUntil(4) && g[4] === 0xffff && g[5] === 0) ||
    (g[0] === 0x64 && g[1] === 0xff9b)
  ) {
    const inner = classify4(embedded(g[6]!, g[7]!));
    return inner ?? { rule: 'non-public', what: 'an IPv4-embedding address' };
  }
  if (g[0] === 0x2002) return { rule: 'non-public', what: 'a 6to4 address (it embeds an IPv4 address)' };
  if (g[0] === 0x2001 && g[1] === 0) return { rule: 'non-public', what: 'a Teredo address (it embeds an IPv4 address)' };
  if ((g[0]! & 0xfe00) === 0xfc00) return { rule: 'unique-local', what: 'a unique-local address' };
  if ((g[0]! & 0xffc0) === 0xfe80) return { rule: 'link-local', what: 'a link-local address' };
  if ((g[0]! & 0xffc0) === 0xfec0) return { rule: 'private', what: 'a site-local address' };
  if ((g[0]! & 0xff00) === 0xff00) return { rule: 'non-public', what: 'a multicast address' };
  if (g[0] === 0x2001 && g[1] === 0xdb8) return { rule: 'non-public', what: 'a documentation address' };
  if (g[0] === 0x100 && zeroUntil(4)) return { rule: 'non-public', what: 'a discard address' };
  return undefined;
}

/**
 * The IPv4 address a host spells in any form a resolver's inet_aton or a URL parser accepts
 * (127.1, 0x7f.1, 0177.0.0.1, 2130706433), or undefined when it is a name. A host that looks
 * numeric but is no address (999.1.1.1, a.123) is reported as such ('invalid'): it is no registry name either.
 */
function ipv4Of(host: string): string | undefined {
  if (isIP(host) === 4) return host;
  const labels = host.split('.');
  const last = labels.at(-1) ?? '';
  // WHATWG: a host whose last label is a number is an IPv4 address, or invalid.
  if (!/^(0x[0-9a-f]*|\d+)$/i.test(last)) return undefined;
  try {
    const parsed = new URL(`http://${host}/`).hostname;
    return isIP(parsed) === 4 ? parsed : 'invalid';
  } catch {
    return 'invalid';
  }
}

/** Names that never leave the node or the site, whatever DNS says (RFC 6761, 6762, 8375; cloud metadata names). */
function localName(host: string): string | undefined {
  if (host === 'localhost' || host.endsWith('.localhost')) return 'a loopback name';
  if (host.endsWith('.internal')) return "an internal name (metadata.google.internal and the cloud's private names live there)";
  if (host.endsWith('.local')) return 'a link-local (mDNS) name';
  if (host === 'home.arpa' || host.endsWith('.home.arpa')) return 'a home-network name';
  if (!host.includes('.')) return "a single-label name (the node's search domains would complete it)";
  return undefined;
}

export interface HostJudgement {
  /** The host's address when it is an IP literal (normalised), else undefined. */
  readonly address: string | undefined;
  /** Why the host is not a public registry; undefined when it is. */
  readonly problem: { readonly rule: HostRule; readonly what: string } | undefined;
}

/** Whether a registry host (lowercased, no brackets, no trailing dot) is a public one, and if not why. */
export function judgeHost(host: string): HostJudgement {
  if (host.includes(':')) {
    if (isIP(host) !== 6) return { address: undefined, problem: { rule: 'non-public', what: 'not an IPv6 address' } };
    return { address: host, problem: classify6(host) };
  }
  const v4 = ipv4Of(host);
  if (v4 === 'invalid') return { address: undefined, problem: { rule: 'non-public', what: 'neither an IPv4 address nor a host name' } };
  if (v4 !== undefined) return { address: v4, problem: classify4(v4) };
  const local = localName(host);
  if (local) return { address: undefined, problem: { rule: 'local-name', what: local } };
  if (!host.split('.').every((c) => domainComponent.test(c)))
    return { address: undefined, problem: { rule: 'non-public', what: 'not a host name' } };
  return { address: undefined, problem: undefined };
}

/** What the operator configured: the allow-list (undefined: any public registry) and the platform's registry. */
export interface RegistryPolicyConfig {
  /**
   * SVC_IMAGE_REGISTRIES: `host[:port]` entries, `*.example.com` (any subdomain), or `*` (any public
   * registry). An exact entry may name a private host (the operator's own registry); a wildcard
   * never matches an address or a local name. Undefined or empty: `*`.
   */
  readonly allowed: readonly string[] | undefined;
  /** The platform's own registry (SVC_BUILD_REGISTRY's host[:port]): always allowed. */
  readonly platformRegistry: string | undefined;
}

export type ImageVerdict =
  | { readonly ok: true; readonly reference: ImageReference }
  | { readonly ok: false; readonly rule: HostRule | 'invalid-reference' | 'not-allowed'; readonly message: string };

const hint = "images come from public registries or the platform's own (SVC_IMAGE_REGISTRIES)";

/** Normalises an allow-list entry or a configured registry as references are (lowercase, no trailing dot, Docker Hub's names as docker.io). */
export function normaliseRegistry(entry: string): string {
  const e = entry.trim().toLowerCase().replace(/\/.*$/, '');
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(e);
  if (!m) return e;
  const host = m[1]!.replace(/\.+$/, '');
  if (dockerHub.has(host) && m[2] === undefined) return 'docker.io';
  return m[2] !== undefined ? `${host}:${m[2]}` : host;
}

function matches(entry: string, ref: ImageReference, isPublic: boolean): boolean {
  if (entry === '*') return isPublic;
  if (entry.startsWith('*.')) {
    // Default port only: a wildcard names a family of public registries, not their every port.
    return isPublic && (ref.port === undefined || ref.port === 443) && ref.host.endsWith(entry.slice(1));
  }
  if (entry === ref.registry) return true;
  // `host` alone also matches host:443, where a registry without a port is reached anyway.
  return ref.port === 443 && entry.replace(/^\[|\]$/g, '') === ref.host;
}

/**
 * Decides whether `ref` may run: refused when it is no image reference, when its registry host is
 * not public (in any spelling) unless the operator named exactly it, or when an allow-list is
 * configured and does not match it. The platform's own registry is always allowed.
 */
export function judgeImage(ref: string, config: RegistryPolicyConfig): ImageVerdict {
  let reference: ImageReference;
  try {
    reference = parseImageReference(ref);
  } catch (err) {
    if (err instanceof ImageReferenceError) return { ok: false, rule: 'invalid-reference', message: `image ${ref}: ${err.message}` };
    throw err;
  }
  if (config.platformRegistry !== undefined && normaliseRegistry(config.platformRegistry) === reference.registry)
    return { ok: true, reference };
  const allowed = (config.allowed ?? []).map(normaliseRegistry).filter(Boolean);
  const list = allowed.length ? allowed : ['*'];
  const { problem } = judgeHost(reference.host);
  const exact = list.filter((e) => e !== '*' && !e.startsWith('*.'));
  if (exact.some((e) => matches(e, reference, false))) return { ok: true, reference };
  if (problem)
    return { ok: false, rule: problem.rule, message: `image ${ref}: registry ${reference.registry} is ${problem.what}; ${hint}` };
  if (list.some((e) => matches(e, reference, true))) return { ok: true, reference };
  return {
    ok: false,
    rule: 'not-allowed',
    message: `image ${ref}: registry ${reference.registry} is not in the allowed registries (${list.join(', ')}); ${hint}`,
  };
}

/** The images an App's spec runs that a tenant chose (the public service's and every other service's). */
export function tenantImages(spec: {
  kind?: string | undefined;
  image?: string | undefined;
  services?: ReadonlyArray<{ image?: string | undefined }> | undefined;
}): string[] {
  if (spec.kind !== 'container') return [];
  return [spec.image, ...(spec.services ?? []).map((s) => s.image)].filter((i): i is string => typeof i === 'string' && i.length > 0);
}

/** The first refusal among `images`, as a message; undefined when every one may run. */
export function refusedImage(images: readonly string[], config: RegistryPolicyConfig): string | undefined {
  for (const image of images) {
    const v = judgeImage(image, config);
    if (!v.ok) return v.message;
  }
  return undefined;
}
