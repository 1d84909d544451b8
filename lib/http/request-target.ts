// The one reading of an HTTP request target that ingress-auth decides on and the runtime serves.
// A gate that decides on one reading of a target and forwards another lets requests walk around it
// (`//x/admin`, `/\x/admin` and `http://x/admin` are hosts to the WHATWG URL parser, a path to a
// naive check). So a target is reduced to one canonical origin-form (RFC 9112 3.2.1), and that exact
// string is what the gate decides on and what it forwards; whatever cannot be reduced is refused.
//
// - origin-form `/path?query` is accepted; absolute-form `http(s)://authority/path?query` (3.2.2) is
//   accepted and reduced to its path and query, its authority reported so the caller can check it
//   names the Host it routes by; authority-form (CONNECT) and asterisk-form (`OPTIONS *`) are refused.
// - Only visible ASCII: no spaces, control characters, bytes above 0x7E or `#`, and no `\` in the
//   path (raw or as `%5C`), which some parsers read as `/`.
// - The path is percent-decoded once (invalid UTF-8 or a bad escape is refused, as is a decoded
//   control character), repeated slashes are merged and `.`/`..` segments resolved (RFC 3986 5.2.4,
//   never above the root), then every segment is encoded again the one way (pchar of RFC 3986).
//   So `%2F` is a separator like `/`, and `%2e%2e` is `..`: decoding the forwarded path gives back
//   exactly the path the gate decided on.
// - The query is passed on as it came (policies do not look at it), within the same character rules.

export interface RequestTarget {
  /** The decoded, normalized path the gate decides on, e.g. `/a b/c/`. */
  path: string;
  /** The canonical origin-form target to forward: the encoded path and the query, e.g. `/a%20b/c/?x=1`. */
  target: string;
  /** The authority of an absolute-form target (lowercase), to compare with the Host header. */
  authority?: string;
}

export class BadRequestTarget extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadRequestTarget';
  }
}

const absoluteForm = /^https?:\/\/([^/?]*)(.*)$/i;

/** `true` when every character is visible ASCII other than `#` and `\`. */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || c === 0x23 /* # */ || c === 0x5c /* \ */) return false;
  }
  return true;
}

/** A path of `/`-separated pchars that encodeSegment leaves as they are (no `%`: nothing to decode). */
const canonicalPath = /^\/[A-Za-z0-9\-._~!*'()$&+,;=:@/]*$/;
/** An empty (`//`), `.` or `..` segment, which the full reading removes or resolves. */
const dotOrEmptySegment = /\/\/|\/\.\.?(?:\/|$)/;

/** pchar (RFC 3986 3.3): unreserved, sub-delims, `:` and `@` stay; everything else is %XX. */
function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/%(24|26|2B|2C|3B|3D|3A|40)/g, (escape) => decodeURIComponent(escape));
}

/**
 * The canonical reading of a raw request target (`req.url`), or a BadRequestTarget saying why
 * there is none (answer 400 with it).
 */
export function canonicalTarget(raw: string): RequestTarget {
  // Most targets are already canonical: characters that neither decode nor encode differently, no
  // empty, `.` or `..` segment. They are their own reading (the same result the full path gives,
  // unit-tested side by side), at a fraction of its cost on every proxied request.
  const q0 = raw.indexOf('?');
  const path0 = q0 === -1 ? raw : raw.slice(0, q0);
  if (canonicalPath.test(path0) && !dotOrEmptySegment.test(path0) && (q0 === -1 || plainAscii(raw.slice(q0).replace(/\\/g, '/')))) {
    return { path: path0, target: raw };
  }
  return fullReading(raw);
}

/** The reading of any target, step by step (canonicalTarget takes a shortcut for canonical ones). */
export function fullReading(raw: string): RequestTarget {
  let rest = raw;
  let authority: string | undefined;
  if (!rest.startsWith('/')) {
    const m = absoluteForm.exec(rest);
    if (!m)
      throw new BadRequestTarget(
        rest === '*' ? 'the asterisk-form request target is not served here' : 'the request target must be a path starting with /',
      );
    authority = m[1]!.toLowerCase();
    if (!authority || authority.includes('@')) throw new BadRequestTarget('the request target names no usable host');
    rest = m[2] || '/';
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  const q = rest.indexOf('?');
  const rawPath = q === -1 ? rest : rest.slice(0, q);
  const query = q === -1 ? '' : rest.slice(q);
  // Browsers send a `\` in a query as it is; it cannot change what the path means.
  if (!plainAscii(rawPath) || !plainAscii(query.replace(/\\/g, '/'))) {
    throw new BadRequestTarget(
      'the request target has a character that must be percent-encoded (space, control, non-ASCII, # or \\ in the path)',
    );
  }
  let decoded: string;
  try {
    decoded = rawPath.includes('%') ? decodeURIComponent(rawPath) : rawPath;
  } catch {
    throw new BadRequestTarget('the request path has a malformed percent-escape');
  }
  if (/[\x00-\x1f\x7f\\]/.test(decoded)) throw new BadRequestTarget('the request path encodes a control character or a backslash');
  const segments: string[] = [];
  const parts = decoded.split('/');
  // A path ending in `/`, `/.` or `/..` names a directory: it keeps its trailing slash.
  const last = parts[parts.length - 1];
  const directory = parts.length > 1 && (last === '' || last === '.' || last === '..');
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    if (part === '..') segments.pop();
    else segments.push(part);
  }
  const tail = directory && segments.length ? '/' : '';
  const path = `/${segments.join('/')}${tail}`;
  const target = `/${segments.map(encodeSegment).join('/')}${tail}${query}`;
  return authority === undefined ? { path, target } : { path, target, authority };
}

/** The path of a target that went through canonicalTarget (its query left off). */
export function pathOfTarget(target: string): string {
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}
