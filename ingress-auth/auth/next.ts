// `next`: where to send a person after sign-in. Only a path of the same app is accepted, so a
// sign-in link can never become an open redirect to another site or another app's hostname.
//
// The value is judged after every normalization a later step could apply, not before: `/.//evil.test`
// passes a naive "starts with one slash" check and becomes `//evil.test` (another host) once its dot
// segment is resolved. So `next` must already be the canonical origin-form the gate itself forwards
// (lib/http/request-target.ts: dot segments resolved, repeated slashes merged, no backslash or
// control character), which every `next` the platform writes is; anything else becomes `/`.
import { canonicalTarget } from '../../lib/http/request-target.js';

const origin = 'http://app.invalid';

/** The path and query `raw` names on this app, or `/` when it is missing or points elsewhere. */
export function safeNext(raw: string | null | undefined): string {
  if (!raw || raw.length > 2048 || !raw.startsWith('/')) return '/';
  let target: string;
  try {
    target = canonicalTarget(raw).target;
  } catch {
    return '/';
  }
  if (target !== raw) return '/';
  // What a browser makes of it (Location, location.replace) must be this origin, at this path.
  const u = new URL(target, origin);
  if (u.origin !== origin || target.startsWith('//') || !target.startsWith('/')) return '/';
  // The platform's own pages are not a destination (a loop back to the sign-in page, say).
  if (u.pathname.toLowerCase() === '/_svc' || u.pathname.toLowerCase().startsWith('/_svc/')) return '/';
  return target;
}
