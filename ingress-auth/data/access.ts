// Who may use an HTML app's data binding (decision 0034), decided purely from the compiled binding,
// the visitor's verified identity (if the declaring page's policy resolved one) and, for a change to
// a record, that record. The order is the spec's: the declaring page's admission first (routes.ts,
// through the gate), then the binding's audience, then ownership. Refusal, never filtering: a
// visitor a read does not admit gets 401 or 403, not an empty list.
import { admits, type Identity } from '../../lib/auth/identity.js';
import type { CompiledBinding } from '../../lib/html-data/compile.js';
import type { StoredRecord } from '../../lib/html-data/store.js';

export type Access =
  | { kind: 'allowed' }
  /** Nobody is signed in and the binding needs someone: 401 with the login URL. */
  | { kind: 'sign-in' }
  /** Signed in, not admitted: 403 naming who is. */
  | { kind: 'forbidden'; why: string };

const allowed: Access = { kind: 'allowed' };

export function isOwner(who: Identity | undefined, namespace: string): boolean {
  return who !== undefined && admits({ owner: true }, who, { namespace });
}

/**
 * Whether the binding's audience admits the visitor; `record` is the record a change acts on (the
 * `$author` audience needs it: without it, an `$author`-only binding is decided at the record).
 */
export function audienceAdmits(
  b: Pick<CompiledBinding, 'audience' | 'source'>,
  who: Identity | undefined,
  namespace: string,
  record?: Pick<StoredRecord, 'author'>,
): Access {
  if (b.audience.includes('public')) return allowed;
  if (!who) return { kind: 'sign-in' };
  if (b.audience.includes('$verified')) return allowed;
  if (b.audience.includes('$owner') && isOwner(who, namespace)) return allowed;
  if (b.audience.includes('$author')) {
    if (record === undefined) return allowed; // decided again with the record (ownership below)
    if (record.author !== null && record.author === who.subject) return allowed;
  }
  return { kind: 'forbidden', why: `data-svc="${b.source}" is for ${b.audience.join(', ')}` };
}

/**
 * Whether a change may act on this record, once the audience admitted the visitor: `$author` decided
 * now; update and delete only by the record's author or the app's owner unless the binding is
 * `shared` (a named record has no author: its audience alone decides); and a change standing inside a
 * `mine` read only on the visitor's own records (`read` is that read binding).
 */
export function mayChange(
  b: Pick<CompiledBinding, 'verb' | 'audience' | 'source' | 'shared'>,
  read: Pick<CompiledBinding, 'mine'> | undefined,
  who: Identity | undefined,
  namespace: string,
  record: Pick<StoredRecord, 'author' | 'name'>,
): Access {
  const audience = audienceAdmits(b, who, namespace, record);
  if (audience.kind !== 'allowed') return audience;
  const own = who !== undefined && record.author !== null && record.author === who.subject;
  const refused = (why: string): Access => (who ? { kind: 'forbidden', why } : { kind: 'sign-in' });
  if (read?.mine && !own) return refused(`data-svc="${b.source}" changes only your own records`);
  const authored = record.name === null;
  if ((b.verb === 'update' || b.verb === 'delete') && authored && !b.shared && !own && !isOwner(who, namespace))
    return refused(`only its author or the app's owner may ${b.verb} this record`);
  return allowed;
}
