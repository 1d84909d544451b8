// Operations of the spec whose capability is not built yet. Each is routed, authenticated and
// authorized like any other (so tokens and errors behave the same), documented in the OpenAPI
// document, and answers 501 {"error":"not_implemented"} until its capability lands.
import type { Action } from '../../lib/tokens/token.js';
import type { Method, Operation, Pending, Tag } from '../operation.js';

type Row = [Method, string, string, Tag, string, Action, Pending];

// Every operation of the spec is served now; the mechanism stays for the next capability.
const rows: Row[] = [];

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
