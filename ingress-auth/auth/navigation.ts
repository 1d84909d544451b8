// Whether an unauthenticated request to a gated path is a person navigating (who should see the
// sign-in page: 303) or a script fetching (which needs a status it can act on: 401 with JSON).
// docs/decisions/0010-sign-in.md has the table; in order:
//   1. a method other than GET/HEAD                                  fetch
//   2. Sec-Fetch-Mode: navigate (or nested-navigate)                 navigation
//   3. Sec-Fetch-Mode present, any other value (cors, no-cors, same-origin, websocket)  fetch
//   4. Sec-Fetch-Dest: document, iframe, frame, embed or object      navigation
//   5. Sec-Fetch-Dest present, any other value                       fetch
//   6. no Sec-Fetch-* (old browsers, curl): Accept negotiation: text/html ranked above
//      application/json and above any other type with a q > 0 -> navigation, else fetch
import type { IncomingHttpHeaders } from 'node:http';

const documentDests = new Set(['document', 'iframe', 'frame', 'embed', 'object']);

export function isNavigation(method: string, headers: IncomingHttpHeaders): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const mode = headerValue(headers['sec-fetch-mode']);
  if (mode) return mode === 'navigate' || mode === 'nested-navigate';
  const dest = headerValue(headers['sec-fetch-dest']);
  if (dest) return documentDests.has(dest);
  return prefersHtml(headers.accept);
}

function headerValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s?.trim().toLowerCase() || undefined;
}

/** Accept ranks text/html (or application/xhtml+xml) strictly above JSON; absent Accept is a fetch. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  let html = -1;
  let json = -1;
  let wildcard = -1;
  for (const part of accept.toLowerCase().split(',')) {
    const [type, ...params] = part.trim().split(';');
    let q = 1;
    for (const p of params) {
      const [k, v] = p.trim().split('=');
      if (k === 'q') q = Number(v);
    }
    if (!Number.isFinite(q)) q = 0;
    if (type === 'text/html' || type === 'application/xhtml+xml') html = Math.max(html, q);
    else if (type === 'application/json' || type?.endsWith('+json')) json = Math.max(json, q);
    else if (type === '*/*') wildcard = Math.max(wildcard, q);
  }
  if (html <= 0) return false;
  return html > json && html >= wildcard;
}
