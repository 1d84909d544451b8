// The account-namespace controller's setup: the account Namespaces, and their guardrails' deny-all
// NetworkPolicy (one deleted by hand is forgotten and put back at once). An App's policy goes back
// with its App, and the sandbox namespace's with the sandbox pool.
import type * as k8s from '@kubernetes/client-node';
import { accountLabel } from '../../lib/accounts.js';
import type { Controller } from '../frame/controller.js';
import { targets } from '../frame/informers.js';
import type { SetupContext } from '../frame/setup.js';
import { AccountReconciler } from './reconciler.js';

export function setupAccounts(
  ctx: SetupContext,
  opts: { registry: string | undefined; sandboxNamespace: string | undefined },
): Controller<k8s.V1Namespace, never> {
  const namespaces = ctx.informers.informer(targets.namespaces(ctx.kc, accountLabel));
  const reconciler = new AccountReconciler(ctx.clients.core, ctx.clients.networking, ctx.log, opts.registry);
  return ctx
    .controller<k8s.V1Namespace, never>({
      kind: 'Namespace',
      primary: namespaces,
      reconciler,
      applier: reconciler.applier,
      appliedKeyOf: (ns) => ns.metadata!.name!,
    })
    .forgets(
      ctx.shared.policies,
      (policy: k8s.V1NetworkPolicy) =>
        policy.metadata?.ownerReferences?.some((o) => o.kind === 'App') || policy.metadata?.namespace === opts.sandboxNamespace
          ? []
          : [policy.metadata!.namespace!],
      { requeue: true },
    );
}
