// The proxy's own answers (unknown host, no machine ready, upstream failure): JSON `{error}` for a
// client that prefers JSON, otherwise a small HTML page a person can read. Never cached: the next
// request may well succeed.
import type { ServerResponse } from 'node:http';

/** A media range's q for a type and how specific the range giving it was (RFC 9110 12.5.1). */
function qualityOf(accept: string, type: string, subtype: string): { q: number; specificity: number } {
  let best = 0;
  let q = 0;
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';');
    const [t, s] = range.trim().split('/');
    if (!t || !s) continue;
    let specificity: number;
    if (t === type && (s === subtype || (subtype === 'json' && s.endsWith('+json')))) specificity = 3;
    else if (t === type && s === '*') specificity = 2;
    else if (t === '*' && s === '*') specificity = 1;
    else continue;
    if (specificity < best) continue;
    let value = 1;
    for (const p of params) {
      const [k, v] = p.trim().split('=');
      if (k === 'q' && v !== undefined) value = Number.isFinite(Number(v)) ? Number(v) : 0;
    }
    q = specificity > best ? value : Math.max(q, value);
    best = specificity;
  }
  return { q, specificity: best };
}

/**
 * JSON when the client ranks JSON above HTML, or names JSON itself while HTML is only covered by a
 * wildcard (`application/json, text/plain, *\/*` of axios): fetch and API clients. A browser
 * (`text/html,...,*\/*;q=0.8`), curl (`*\/*`) or no Accept at all get HTML.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const json = qualityOf(accept, 'application', 'json');
  const html = qualityOf(accept, 'text', 'html');
  if (json.q === 0) return false;
  return json.q > html.q || (json.q === html.q && json.specificity > html.specificity);
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const titles: Record<number, string> = { 404: 'Not found', 502: 'Bad gateway', 503: 'Not available yet', 504: 'Gateway timeout' };

/** The status line's companions: headers and body of the proxy's own error answer. */
export function errorPage(
  status: number,
  message: string,
  accept: string | undefined,
  requestId: string,
): { headers: Record<string, string | number>; body: string } {
  const json = prefersJson(accept);
  const title = titles[status] ?? 'Error';
  const body = json
    ? JSON.stringify({ error: message })
    : `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${status} ${escape(title)}</title>` +
      '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:15vh auto;padding:0 1rem;color:#222}small{color:#777}</style></head>' +
      `<body><h1>${escape(title)}</h1><p>${escape(message)}</p><p><small>request ${escape(requestId)}</small></p></body></html>\n`;
  return {
    headers: {
      'content-type': json ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      'x-request-id': requestId,
    },
    body,
  };
}

export function sendError(res: ServerResponse, status: number, message: string, accept: string | undefined, requestId: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const page = errorPage(status, message, accept, requestId);
  res.writeHead(status, page.headers);
  res.end(res.req?.method === 'HEAD' ? undefined : page.body);
}
