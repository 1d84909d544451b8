// Which rules of a policy apply to a request path. Shared by ingress-auth (which enforces) and
// anything that explains a policy, so "is /x gated" has one answer.
//
// Matching fails closed: a path an upstream might read as a gated one is gated. Requests are
// normalized the way the runtime resolves files (percent-decoded, dot segments and repeated slashes
// resolved), backslashes and `;parameters` are also read as some servers read them, gates compare
// case-insensitively (some upstreams do), and exceptions only exactly (an exception must never
// un-gate a path its author did not write). An exact pattern matches with or without a trailing
// slash (`/admin` and `/admin/` are one page to a person); `/prefix/**` covers `/prefix` itself; a
// page file is read as the route it serves too (`/admin.html` is `/admin`).
import path from 'node:path';
import type { Admit, AuthPolicy, AuthRule } from './fields.js';

/** The request path as the runtime resolves it, or undefined when it cannot be decoded. */
export function normalizeRequestPath(raw: string): string | undefined {
  const pathOnly = raw.replace(/[?#].*$/s, '');
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathOnly);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  return path.posix.normalize('/' + decoded);
}

/** A page file's name and the route it also answers (the runtime's clean URLs and index pages). */
const pageFile = /(?:\/(?:index\.html?|index\.md|readme\.md))$|\.(?:html?|md|markdown)$/i;

/**
 * The readings of one request path to check: as the runtime reads it, as lenient servers do, and
 * the route a page file answers (`/admin.html` is the page of `/admin`, `/docs/index.html` of
 * `/docs/`), so a pattern written for a route also covers the file behind it.
 */
function readings(raw: string): string[] | undefined {
  const plain = normalizeRequestPath(raw);
  if (plain === undefined) return undefined;
  const lenient = path.posix.normalize(plain.replace(/\\/g, '/').replace(/;[^/]*/g, ''));
  const out = new Set([plain, lenient]);
  for (const p of [plain, lenient]) {
    const m = pageFile.exec(p);
    if (m) out.add(m[0].startsWith('/') ? p.slice(0, m.index + 1) : p.slice(0, m.index));
  }
  return [...out];
}

const segmentsOf = (p: string) => {
  const trimmed = p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
  return trimmed === '/' ? [] : trimmed.slice(1).split('/');
};

/** Whether a normalized path matches a pattern (exact, `[param]`, a last `[...rest]`, a last `**`). */
export function matchesPattern(pattern: string, normalizedPath: string, opts: { caseInsensitive?: boolean } = {}): boolean {
  const fold = (s: string) => (opts.caseInsensitive ? s.toLowerCase() : s);
  const pat = segmentsOf(pattern);
  const got = segmentsOf(normalizedPath);
  for (let i = 0; i < pat.length; i++) {
    const seg = pat[i]!;
    const last = i === pat.length - 1;
    if (last && seg === '**') return got.length >= i;
    if (last && /^\[\.\.\.[A-Za-z_]\w*\]$/.test(seg)) return got.length > i && got.slice(i).every(Boolean);
    const have = got[i];
    if (have === undefined) return false;
    if (/^\[[A-Za-z_]\w*\]$/.test(seg)) {
      if (!have) return false;
      continue;
    }
    if (fold(seg) !== fold(have)) return false;
  }
  return got.length === pat.length;
}

export interface Decision {
  /** `auth`: the request must be admitted; `identity`: public, the identity is resolved when present. */
  mode: 'auth' | 'identity';
  /** The rules that apply. A deployed policy admits the same identities in all of them; for an App
   * applied by hand that differ, a request must be admitted by every gating rule. */
  rules: AuthRule[];
  admits: Admit[];
}

const gates = (rule: AuthRule, p: string) =>
  rule.paths.some((pat) => matchesPattern(pat, p, { caseInsensitive: true })) && !(rule.except ?? []).some((pat) => matchesPattern(pat, p));

/** What a policy says about a request path; undefined when nothing applies (public, no identity). */
export function decide(policy: AuthPolicy | undefined, rawPath: string): Decision | undefined {
  const rules = policy?.rules ?? [];
  const auth = rules.filter((r) => r.mode === 'auth');
  const paths = readings(rawPath);
  // A path that cannot be decoded is gated by every gate: no exception can be shown to apply.
  const gating = paths === undefined ? auth : auth.filter((r) => paths.some((p) => gates(r, p)));
  if (gating.length) return { mode: 'auth', rules: gating, admits: gating.map((r) => r.admit) };
  const identity = rules.filter(
    (r) => r.mode === 'identity' && (paths ?? []).some((p) => r.paths.some((pat) => matchesPattern(pat, p, { caseInsensitive: true }))),
  );
  if (identity.length) return { mode: 'identity', rules: identity, admits: identity.map((r) => r.admit) };
  return undefined;
}
