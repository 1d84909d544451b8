// Which names a person may add as an app's custom domain, in the one spelling the platform stores,
// claims and routes (docs/decisions/0027-app-domains.md). Everything a person types reaches here
// first, so each refusal says in words what is wrong: it is the 400's reason.
import { isIP } from 'node:net';
import { domainToASCII, domainToUnicode } from 'node:url';
import { parse as parseSuffix } from 'tldts';

export interface DomainName {
  /** Lowercase ASCII (IDN labels in punycode), no trailing dot, `*.` first for a wildcard. */
  name: string;
  /** The name as a person reads it (punycode labels decoded). */
  unicode: string;
  wildcard: boolean;
  /** The name without `*.`. */
  base: string;
  /** The base is its own registrable domain (`shop.example`, not `www.shop.example`): DNS allows no CNAME there. */
  apex: boolean;
}

export type ParsedDomainName = { ok: true; name: DomainName } | { ok: false; message: string };

const maxNameLength = 253;
const maxLabelLength = 63;
/**
 * The longest label the platform puts in front of a base: `svc-check-` and 8 hex digits, where a
 * wildcard's routing is checked (check.ts); `_svc-challenge` (records.ts) is shorter. A base with no
 * room for it could be added but never verified.
 */
const longestLabelBefore = 'svc-check-00000000.'.length;

/**
 * Reserved top-level domains. `.example` and `.test` (RFC 6761) are not in the Public Suffix List
 * but are taken: local platforms and tests serve them through their own DNS server. The others
 * never resolve in public DNS, or name infrastructure rather than sites (`.arpa`: reverse DNS,
 * home.arpa); `.onion` is even listed as a public suffix. Refused with their own message.
 */
const reservedAllowed = new Set(['example', 'test']);
const reservedRefused: ReadonlyMap<string, string> = new Map([
  ['localhost', 'names under .localhost are this machine (RFC 6761), never a public site'],
  ['local', 'names under .local are multicast DNS names of a local network (RFC 6762), never a public site'],
  ['internal', 'names under .internal are reserved for private networks, never a public site'],
  ['invalid', 'names under .invalid never exist (RFC 6761)'],
  ['onion', 'names under .onion are Tor services (RFC 7686), which public DNS never answers'],
  ['alt', 'names under .alt belong to non-DNS naming systems (RFC 9476), which public DNS never answers'],
  ['arpa', 'names under .arpa are infrastructure (reverse DNS, home networks), never a public site'],
]);

export function parseDomainName(input: string, o: { appsDomain: string }): ParsedDomainName {
  const refuse = (message: string): ParsedDomainName => ({ ok: false, message });
  if (input === '') return refuse('the name is empty');

  // Before the character check, which would otherwise call `::1` a name with colons in it.
  const literal = input.endsWith('.') ? input.slice(0, -1) : input;
  if (/^\[.*\]$/s.test(literal) || isIP(literal) !== 0) return refuse(ipMessage);

  const bad = firstForbidden(input);
  if (bad !== undefined) return refuse(bad);

  const wildcard = input.startsWith('*.');
  const rest = wildcard ? input.slice(2) : input;
  if (rest.includes('*')) return refuse(wildcardMessage);

  // Only non-ASCII input goes through IDNA: for ASCII, node's conversion would also read `0x7f.1` as
  // 127.0.0.1 and answer '' for `foo.123`, hiding the reasons given below.
  let ascii = rest.toLowerCase();
  if (/[^\x00-\x7f]/.test(rest)) {
    ascii = domainToASCII(rest);
    if (ascii === '') return refuse('it is not a valid internationalized domain name: it has a character IDNA does not allow');
    // IDNA maps some characters to ASCII ones a name cannot hold (a full-width `＿` or `＊`).
    const converted = firstForbidden(ascii);
    if (converted !== undefined) return refuse(converted);
    if (ascii.includes('*')) return refuse(wildcardMessage);
  }
  if (ascii.endsWith('.')) ascii = ascii.slice(0, -1);
  const base = ascii;
  const name = wildcard ? `*.${base}` : base;

  if (name.length > maxNameLength) return refuse(`it is ${name.length} characters long; a domain name has at most ${maxNameLength}`);
  const labels = base.split('.');
  for (const label of labels) {
    const problem = labelProblem(label);
    if (problem !== undefined) return refuse(problem);
  }
  if (endsInANumber(labels) || readAsAddress(base)) return refuse(ipMessage);

  const tld = labels[labels.length - 1]!;
  if (labels.length === 1) {
    return refuse(
      wildcard
        ? `a wildcard directly over the top-level domain .${tld} would cover names other people own`
        : `"${base}" is a single label; add a full domain name such as shop.example.com`,
    );
  }

  const apps = normalizedAppsDomain(o.appsDomain);
  if (apps !== '' && (base === apps || base.endsWith(`.${apps}`)))
    return refuse(`${apps} is the platform's apps domain: its names are app hostnames, given by app names`);

  const reserved = reservedRefused.get(tld);
  if (reserved !== undefined) return refuse(reserved);

  const suffix = parseSuffix(base, { allowPrivateDomains: true, extractHostname: false });
  // A top-level domain the Public Suffix List does not know has no public registry: nobody can
  // publish records under it in public DNS, and a name under it (.corp, .lan, .home) is somebody's
  // private network. tldts then calls the last label the suffix, with neither flag set. A TLD
  // delegated after the bundled list is refused until tldts is updated.
  if (!reservedAllowed.has(tld) && suffix.isIcann !== true && suffix.isPrivate !== true)
    return refuse(`the top-level domain .${tld} is not a public one (it is not in the Public Suffix List)`);
  // Both sections of the list: a private suffix (github.io) is shared by its users as com is.
  if (suffix.publicSuffix === base) {
    return refuse(
      wildcard
        ? `a wildcard directly over the public suffix ${base} would cover names other people own`
        : `${base} is a public suffix, under which names belong to different owners; add your own domain under it`,
    );
  }
  if (base.length + longestLabelBefore > maxNameLength) {
    return refuse(
      `it is ${base.length} characters long; at most ${maxNameLength - longestLabelBefore} fit, so that the records the platform ` +
        `checks under it (_svc-challenge.<name>) stay within DNS's ${maxNameLength}`,
    );
  }

  const readable = domainToUnicode(base);
  return {
    ok: true,
    name: {
      name,
      unicode: wildcard ? `*.${readable}` : readable,
      wildcard,
      base,
      apex: suffix.domain === base,
    },
  };
}

const wildcardMessage = 'a wildcard "*" may only be the whole first label, as in *.shop.example';
const ipMessage = 'it is an IP address, not a domain name: add a name whose records point to the platform';

/** The first ASCII or control character a domain name cannot hold, in words; other non-ASCII is IDNA's to judge. */
function firstForbidden(s: string): string | undefined {
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (/[A-Za-z0-9.*-]/.test(ch) || code > 0x9f) continue;
    const hint = 'a domain name has only letters, digits, hyphens and dots';
    if (ch === ' ') return `it contains a space; ${hint}`;
    if (ch === '_') return `it contains an underscore; ${hint}`;
    if (code < 0x20 || code >= 0x7f)
      return `it contains a control character (U+${code.toString(16).toUpperCase().padStart(4, '0')}); ${hint}`;
    if (ch === ':') return `it contains ":" (a port or an address is not part of a domain name); ${hint}`;
    if (ch === '/') return `it contains "/" (give the domain alone, not a URL or path); ${hint}`;
    return `it contains "${ch}"; ${hint}`;
  }
  return undefined;
}

function labelProblem(label: string): string | undefined {
  if (label === '') return 'it has an empty label (two dots in a row, or a dot at the start)';
  if (label.length > maxLabelLength)
    return `the label "${label.slice(0, 20)}…" is ${label.length} characters long; a label has at most ${maxLabelLength}`;
  if (!/^[a-z0-9-]+$/.test(label)) return `the label "${label}" has characters other than letters, digits and hyphens`;
  if (label.startsWith('-') || label.endsWith('-')) return `the label "${label}" starts or ends with a hyphen`;
  if (label.startsWith('xn--')) {
    // Punycode typed as such must be what IDNA itself would write for the characters it encodes:
    // otherwise one name would have two spellings, or a label would show as garbage.
    const decoded = domainToUnicode(label);
    if (decoded === label || decoded === '' || domainToASCII(decoded) !== label)
      return `the label "${label}" starts with xn-- but is not valid punycode of an internationalized label`;
  }
  return undefined;
}

/**
 * Whether a URL parser reads the name as an IPv4 address (WHATWG's "ends in a number": a last label
 * of digits, or 0x and hex digits): `127.1`, `0x7f.1` and `2130706433` are 127.0.0.1 to a browser,
 * and `1.2.3.4.5` an error. No top-level domain is numeric.
 */
function endsInANumber(labels: string[]): boolean {
  const last = labels[labels.length - 1]!;
  return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/.test(last);
}

/** Anything node's URL parser itself reads as an address: a second opinion on the rules above. */
function readAsAddress(base: string): boolean {
  try {
    return isIP(new URL(`http://${base}/`).hostname.replace(/^\[|\]$/g, '')) !== 0;
  } catch {
    return true;
  }
}

function normalizedAppsDomain(appsDomain: string): string {
  const trimmed = appsDomain.endsWith('.') ? appsDomain.slice(0, -1) : appsDomain;
  return /[^\x00-\x7f]/.test(trimmed) ? domainToASCII(trimmed) : trimmed.toLowerCase();
}
