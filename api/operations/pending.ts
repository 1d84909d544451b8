// Operations of the spec whose capability is not built yet. Each is routed, authenticated and
// authorized like any other (so tokens and errors behave the same), documented in the OpenAPI
// document, and answers 501 {"error":"not_implemented"} until its capability lands.
import type { Action } from '../../lib/tokens/token.js';
import type { Method, Operation, Pending, Tag } from '../operation.js';

type Row = [Method, string, string, Tag, string, Action, Pending];

const rows: Row[] = [
  ['GET', '/domains', 'listDomains', 'domains', 'List domains', 'read', 'domains'],
  ['POST', '/domains', 'createDomain', 'domains', 'Create domain', 'write', 'domains'],
  ['GET', '/domains/search', 'searchDomains', 'domains', 'Search domains', 'read', 'domains'],
  ['POST', '/domains/{domain}/autorenew', 'setDomainAutorenew', 'domains', 'Set auto-renew for domain', 'write', 'domains'],
  ['POST', '/domains/{domain}/renew', 'renewDomain', 'domains', 'Renew domain', 'write', 'domains'],
];

export function pendingOperations(): Operation[] {
  return rows.map(([method, path, operationId, tag, summary, action, pending]) => ({
    method,
    path,
    operationId,
    tag,
    summary,
    action,
    pending,
  }));
}
