// `next`: where to send a person after sign-in. Only a path of the same app is accepted, so a
// sign-in link can never become an open redirect to another site or another app's hostname.

/** The path and query `raw` names on this app, or `/` when it is missing or points elsewhere. */
export function safeNext(raw: string | null | undefined): string {
  if (!raw || raw.length > 2048) return '/';
  // Backslashes and control characters: browsers read `/\evil.test` as `//evil.test`.
  if (!raw.startsWith('/') || raw.startsWith('//') || /[\\\u0000-\u001f\u007f]/.test(raw)) return '/';
  let u: URL;
  try {
    u = new URL(raw, 'http://app.invalid');
  } catch {
    return '/';
  }
  if (u.origin !== 'http://app.invalid') return '/';
  // The platform's own pages are not a destination (a loop back to the sign-in page, say).
  if (u.pathname.toLowerCase().startsWith('/_svc/')) return '/';
  return u.pathname + u.search;
}
