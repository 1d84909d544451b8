// How `svc` tells a failed call, in words and never as a stack trace: the status and the API's
// message, and what to do about the usual ones (no token or a refused one, a token that lacks an
// action or an app, an API that cannot be reached).
import { ApiError, ApiUnreachableError } from '../lib/client/index.js';

/** What to do about a 403, from the API's words for what the token lacks (api/middleware/authenticate.ts, api/app-access.ts). */
function lacking(message: string): string {
  const action = /token lacks action "([^"]+)"/.exec(message)?.[1];
  if (action) return `this needs a token with the "${action}" action (svc tokens create --actions ${action}, or one without restrictions)`;
  const app = /token lacks app "([^"]+)"/.exec(message)?.[1];
  if (app) return `this needs a token for app ${app} (svc tokens create --apps ${app}, or one without restrictions)`;
  if (/account-wide/.test(message)) return 'this needs a token not restricted to apps';
  return 'the token is restricted: use one that has what the message names';
}

/** The lines svc prints on stderr for an error that is not a usage error. */
export function describeFailure(err: unknown): string[] {
  const lines = [`svc: ${err instanceof Error ? err.message : String(err)}`];
  const status = err instanceof ApiError ? err.status : undefined;
  if (status === 401) lines.push('svc: to log in, set $SVC_TOKEN (or pass --token) to a valid API token of your account, or run svc login');
  if (status === 403 && err instanceof ApiError) lines.push(`svc: ${lacking(err.apiMessage)}`);
  if (err instanceof ApiUnreachableError) lines.push('svc: is $SVC_API_URL right? It is the API root, e.g. https://api.example.com/api');
  if (err instanceof ApiError && err.requestId && status !== undefined && status >= 500) lines.push(`svc: request id ${err.requestId}`);
  return lines;
}
