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

/** Which listed token is this console's session: the API marks the one a request was made with (`current`). */
export function sessionToken(tokens: readonly Token[]): string | undefined {
  return tokens.find((t) => t.current && !t.revoked)?.nonce;
}
