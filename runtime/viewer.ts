// The viewer of a request, as the auth proxy (ingress-auth) tells it: it strips client-supplied
// x-svc-* headers and sets these from the verified session, so the runtime can trust them.
import type { IncomingMessage } from 'node:http';
import { identityHeaders } from '../lib/contract.js';

/** Lowercased, as Node's request headers have them. */
export const viewerHeaders = {
  id: lower(identityHeaders.subject),
  name: lower(identityHeaders.name),
  email: lower(identityHeaders.email),
  provider: lower(identityHeaders.provider),
  verified: lower(identityHeaders.verified),
  owner: lower(identityHeaders.owner),
} as const;

function lower<T extends string>(name: T): Lowercase<T> {
  return name.toLowerCase() as Lowercase<T>;
}

export type Viewer = Record<keyof typeof viewerHeaders, string>;

/** What a response built from the viewer varies on. */
export const viewerVary = Object.values(viewerHeaders).join(', ');

function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** Empty strings for an anonymous viewer. */
export function viewerOf(req: IncomingMessage): Viewer {
  const viewer = {} as Viewer;
  for (const [field, name] of Object.entries(viewerHeaders) as [keyof Viewer, string][]) viewer[field] = header(req, name);
  // ingress-auth percent-encodes the name (header values are bytes, names are any Unicode).
  try {
    viewer.name = decodeURIComponent(viewer.name);
  } catch {
    // Not encoded by ingress-auth: used as it is.
  }
  return viewer;
}

/** A stable key of the viewer, for tagging personal responses. */
export function viewerKey(req: IncomingMessage): string {
  return JSON.stringify(Object.values(viewerHeaders).map((name) => header(req, name)));
}

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => escapes[c]!);
}
