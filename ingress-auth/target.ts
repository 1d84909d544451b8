// The request target as the gate decides on it: canonical (the path the app receives is the path
// the policy was asked about), and whether it is the platform's (`/_svc`), however spelled.
import type { IncomingMessage } from 'node:http';
import { BadRequestTarget, canonicalTarget } from '../lib/http/request-target.js';

/** `/_svc` and everything under it, however the path is spelled (case, percent-encoding). */
export function platformPath(url: string): string | undefined {
  // `/x...` with x none of `_`, `%` or `/`: decoding and merging slashes leave its first two
  // characters as they are, and no lowercasing makes `_` of another one, so it is never `/_svc`.
  // Most requests end here, before the copies below.
  const second = url.charCodeAt(1);
  if (url.charCodeAt(0) === 47 && second !== 95 && second !== 37 && second !== 47 && url.length > 1) return undefined;
  const q = url.indexOf('?');
  let p = q === -1 ? url : url.slice(0, q);
  if (p.includes('%')) {
    try {
      p = decodeURIComponent(p);
    } catch {
      // Undecodable: left as it is.
    }
  }
  p = p.replace(/\/{2,}/g, '/').toLowerCase();
  return p === '/_svc' || p.startsWith('/_svc/') ? p : undefined;
}

/**
 * Replaces `req.url` by its canonical origin-form (lib/http/request-target.ts), so the path the gate
 * decides on is the one the app receives; the reason to refuse the request when there is none.
 */
export function canonicalize(req: IncomingMessage): string | undefined {
  try {
    const t = canonicalTarget(req.url ?? '/');
    if (t.authority !== undefined && t.authority !== (req.headers.host ?? '').trim().toLowerCase()) {
      return 'the absolute-form request target names another host than the Host header';
    }
    req.url = t.target;
    return undefined;
  } catch (err) {
    if (err instanceof BadRequestTarget) return err.message;
    throw err;
  }
}
