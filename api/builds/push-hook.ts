// POST /api/hooks/git/<hook id>: where a code host sends an imported repository's push events, as
// GitHub, Gitea and Forgejo send them: `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body with
// the hook's secret>`, a delivery id (`X-GitHub-Delivery`, `X-Gitea-Delivery`), the event name
// (`push`, `delete`, `ping`). No bearer token: the signature is the credential, checked in constant
// time over the exact bytes received before anything in them is read. A delivery is acted on once
// (its id is kept), and the head it names moves once (a poll that saw it first leaves nothing to do).
// Code hosts do not retry pushes, so the poll (api/builds/imports.ts) is what catches up.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type { ImportedRepoStore } from '../../lib/builds/imported-repos.js';
import { readLimited } from '../../lib/http/body.js';
import type { Logger } from '../../lib/logger.js';
import type { GitSync } from './imports.js';

export const hookPrefix = '/api/hooks/git/';
const bodyLimit = 1024 * 1024;

export function pushHookEndpoint(d: {
  importedRepos: ImportedRepoStore;
  sync: Pick<GitSync, 'onHead'>;
  log: Logger;
  clock: () => Date;
}): Koa.Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(hookPrefix)) return next() as Promise<void>;
    const fail = (status: number, error: string) => {
      ctx.status = status;
      ctx.body = { error };
    };
    const hookId = ctx.path.slice(hookPrefix.length);
    if (!/^hook_[0-9a-f]{24}$/.test(hookId)) return fail(404, 'no such hook');
    if (ctx.method !== 'POST') {
      ctx.set('Allow', 'POST');
      return fail(405, `method ${ctx.method} not allowed on ${ctx.path}`);
    }
    const raw = await readLimited(ctx.req, bodyLimit);
    if (!raw) return fail(413, `a push event larger than ${bodyLimit} bytes is refused`);
    const repo = await d.importedRepos.byHook(hookId);
    const given = /^sha256=([0-9a-f]{64})$/.exec(ctx.get('x-hub-signature-256'))?.[1];
    const want = repo ? createHmac('sha256', repo.hookSecret).update(raw).digest() : undefined;
    if (!repo || !given || !want || !timingSafeEqual(Buffer.from(given, 'hex'), want))
      return fail(401, 'the signature (X-Hub-Signature-256) does not match this hook');
    const event = ctx.get('x-github-event') || ctx.get('x-gitea-event') || 'push';
    const delivery = ctx.get('x-github-delivery') || ctx.get('x-gitea-delivery');
    if (!delivery || delivery.length > 128) return fail(400, 'a delivery id (X-GitHub-Delivery) is required');
    if (event === 'ping') {
      ctx.status = 200;
      ctx.body = { ok: true };
      return;
    }
    if (event !== 'push' && event !== 'delete') {
      ctx.status = 202;
      ctx.body = { ignored: `event ${event}` };
      return;
    }
    let payload: { ref?: unknown; after?: unknown; deleted?: unknown; ref_type?: unknown };
    try {
      payload = JSON.parse(raw.toString('utf8')) as typeof payload;
    } catch {
      return fail(400, 'the event is not JSON');
    }
    const ref = typeof payload.ref === 'string' ? payload.ref : '';
    // push: refs/heads/<branch>; delete: the branch name with ref_type "branch".
    const branch =
      event === 'delete'
        ? payload.ref_type === 'branch'
          ? ref
          : ''
        : ref.startsWith('refs/heads/')
          ? ref.slice('refs/heads/'.length)
          : '';
    if (!branch) {
      ctx.status = 202;
      ctx.body = { ignored: 'not a branch' };
      return;
    }
    if (!(await d.importedRepos.firstDelivery(hookId, delivery, d.clock()))) {
      ctx.status = 200;
      ctx.body = { duplicate: delivery };
      return;
    }
    const after =
      typeof payload.after === 'string' && /^[0-9a-f]{40}$/.test(payload.after) && !/^0{40}$/.test(payload.after) ? payload.after : null;
    const gone = event === 'delete' || payload.deleted === true || after === null;
    const build = await d.sync.onHead(repo, branch, gone ? null : after, `push ${delivery}`);
    d.log.info({ app: repo.app, branch, delivery, build, deleted: gone }, 'Push event');
    ctx.status = 202;
    ctx.body = { branch, ...(build ? { build } : {}), ...(gone ? { deleted: true } : {}) };
  };
}
