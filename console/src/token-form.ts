// The tokens page's pure parts: the create request from the form, and which listed token is this
// console's session. Unit-tested.
import type { Token, TokenAction, TokenRequest } from './api.js';

/** Every action a token may be restricted to, in words (docs/api/tokens.md#actions). */
export const tokenActions: ReadonlyArray<{ action: TokenAction; words: string }> = [
  { action: 'read', words: 'read everything but tokens and env values' },
  { action: 'write', words: 'create, change and delete apps, env, domains, databases' },
  { action: 'deploy', words: 'deploy, roll back, build' },
  { action: 'exec', words: 'sandboxes and eval' },
  { action: 'admin', words: 'tokens and webhooks' },
];

/** POST /account/tokens's body: a restriction only for what was filled in. */
export function tokenRequest(form: { name: string; apps: string; actions: TokenAction[]; expiresIn: string }): TokenRequest {
  const apps = form.apps
    .split(/[\s,]+/)
    .map((a) => a.trim())
    .filter(Boolean);
  return {
    ...(form.name.trim() ? { name: form.name.trim() } : {}),
    ...(apps.length ? { apps } : {}),
    ...(form.actions.length ? { actions: tokenActions.map((a) => a.action).filter((a) => form.actions.includes(a)) } : {}),
    expires_in: form.expiresIn,
  };
}

const sessionLifetimeMs = 12 * 3600_000;

/**
 * Which of the listed tokens may be this console's session. The cookie is HttpOnly and the API does
 * not say which token a request came with, so it is told from what sign-in mints (api/console):
 * a live token named `console` whose one restriction is an expiry 12 hours after its creation.
 * When exactly one such token is live it is this session's (a signed-in console has one); with
 * several (other browsers), any may be.
 */
export function sessionTokens(tokens: readonly Token[], now = Date.now()): { mine: string | undefined; candidates: Set<string> } {
  const candidates = tokens.filter((t) => {
    if (t.revoked || t.name !== 'console' || Date.parse(t.expires_at) <= now) return false;
    if (t.restrictions.length !== 1 || !t.restrictions[0]!.startsWith('expires=')) return false;
    const lifetime = Date.parse(t.expires_at) - Date.parse(t.created_at);
    return Math.abs(lifetime - sessionLifetimeMs) < 60_000;
  });
  return { mine: candidates.length === 1 ? candidates[0]!.nonce : undefined, candidates: new Set(candidates.map((t) => t.nonce)) };
}
