// The token service's HTTP side, the registry's `realm`: GET /token with HTTP Basic (docker, skopeo,
// the API's pushes) or POST /token with an OAuth2 password grant (containerd asks that way first),
// `service` and `scope` as distribution's token spec says. A request without a credential, or with
// one that is no one's, gets a 401 and nothing else: no anonymous token, not even an empty one.
import http from 'node:http';
import type { Logger } from '../lib/logger.js';
import { grant, parseScopes } from './grants.js';
import { identify, type PrincipalSources } from './principals.js';
import type { TokenSigner } from './token.js';

export interface TokenServiceDeps {
  signer: TokenSigner;
  service: string;
  sources: PrincipalSources;
  log: Logger;
}

const formLimitBytes = 16 * 1024;

function answer(res: http.ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/** The form of a POST, or undefined when it is larger than a token request can be. */
async function readForm(req: http.IncomingMessage): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > formLimitBytes) return undefined;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The user and password of an `Authorization: Basic` header. */
export function basicCredential(header: string | undefined): { username: string; password: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon > 0 ? { username: text.slice(0, colon), password: text.slice(colon + 1) } : undefined;
}

export function tokenHandler(d: TokenServiceDeps): http.RequestListener {
  return (req, res) => {
    void handle(d, req, res).catch((err: unknown) => {
      d.log.error({ err }, 'Token request failed');
      if (!res.headersSent) answer(res, 500, { error: 'the token service failed' });
      else res.destroy();
    });
  };
}

async function handle(d: TokenServiceDeps, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://registry-auth');
  if (url.pathname === '/health') return answer(res, 200, { ok: true });
  if (url.pathname !== '/token') return answer(res, 404, { error: 'the token service serves /token only' });
  if (req.method !== 'GET' && req.method !== 'POST')
    return answer(res, 405, { error: `method ${req.method} not allowed` }, { allow: 'GET, POST' });

  let params = url.searchParams;
  let credential = basicCredential(req.headers.authorization);
  if (req.method === 'POST') {
    const form = await readForm(req);
    if (!form) return answer(res, 413, { error: `a token request larger than ${formLimitBytes} bytes is refused` });
    if (form.get('grant_type') !== 'password')
      return answer(res, 400, { error: 'unsupported_grant_type', error_description: 'only grant_type=password is served' });
    params = form;
    const username = form.get('username');
    const password = form.get('password');
    credential = username && password ? { username, password } : credential;
  }
  const service = params.get('service');
  if (service !== null && service !== d.service)
    return answer(res, 400, { error: `this token service serves ${d.service}, not ${service}` });

  const challenge = { 'www-authenticate': `Basic realm="${d.service}"` };
  if (!credential) return answer(res, 401, { error: 'a credential is required' }, challenge);
  const principal = await identify(d.sources, credential.username, credential.password);
  if (!principal) {
    d.log.info({ user: credential.username.slice(0, 200) }, 'Refused a registry credential');
    return answer(res, 401, { error: 'the credential is not valid' }, challenge);
  }
  const asked = parseScopes(params.getAll('scope'));
  const access = grant(principal, asked);
  const signed = await d.signer.sign(credential.username, access);
  d.log.debug({ user: credential.username, asked, access }, 'Issued a registry token');
  answer(res, 200, { token: signed.token, access_token: signed.token, expires_in: signed.expiresIn, issued_at: signed.issuedAt });
}
