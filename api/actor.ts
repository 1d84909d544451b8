// Who a request acts for, as records (created_by) and actions (Actor) name it: one spelling for every route.
import type { Actor } from './deploys/actions.js';
import type { Caller } from './operation.js';

export const createdBy = (caller: Caller) => `token:${caller.principal.nonce}`;

/** Who an action acts for. */
export const actorOf = (caller: Caller): Actor => ({
  accountId: caller.account.id,
  namespace: caller.account.namespace,
  createdBy: createdBy(caller),
});
