// The pure parts of the page that approves a `svc login` (pages/cli-login.tsx): the user code as a
// person types it, the approve request from the form, a login's state in words, and the code kept
// across sign-in. Unit-tested (test/unit/console-cli-login.test.ts).
import type { CliLoginApproval, CliLoginState, TokenAction } from './api.js';
import { tokenActions } from './token-form.js';

/** The letters of a user code: no vowels, no look-alikes (the API's, api/cli-login/logins.ts). */
export const userCodeAlphabet = 'BCDFGHJKLMNPQRSTVWXZ';

/** A user code as a person may type it (any case, the dash or spaces optional) in its one form, `ABCD-EFGH`; undefined when it cannot be one. */
export function normalUserCode(input: string): string | undefined {
  const letters = input.toUpperCase().replace(/[\s-]/g, '');
  if (letters.length !== 8 || [...letters].some((c) => !userCodeAlphabet.includes(c))) return undefined;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}

/** Why what was typed cannot be a user code, in words; undefined when it can. */
export function userCodeProblem(input: string): string | undefined {
  const letters = input.toUpperCase().replace(/[\s-]/g, '');
  if (!letters) return 'Enter the code your terminal shows, such as BCDF-GHJK.';
  if (normalUserCode(input)) return undefined;
  const foreign = [...new Set([...letters].filter((c) => !userCodeAlphabet.includes(c)))];
  if (foreign.length)
    return `A code has only the letters ${userCodeAlphabet} (no vowels, no digits): ${foreign.join(' ')} cannot be in it. Check the code your terminal shows.`;
  return `A code has 8 letters, such as BCDF-GHJK: this has ${letters.length}.`;
}

export type Access = 'all' | 'chosen';

export const defaultLifetimeDays = 90;
/** What an approval grants unless the person chooses otherwise: everything but `admin` (tokens, webhooks). */
export const defaultLoginActions: readonly TokenAction[] = tokenActions.map((a) => a.action).filter((a) => a !== 'admin');
export const maxLifetimeDays = 366;

/** The approve request from the form, or what is wrong with the form (nothing is sent while something is). */
export function approveRequest(form: {
  access: Access;
  actions: readonly TokenAction[];
  days: string;
}): { body: CliLoginApproval } | { problem: string; field: 'days' | 'actions' } {
  const days = form.days.trim();
  if (!/^\d+$/.test(days) || Number(days) < 1 || Number(days) > maxLifetimeDays)
    return { problem: `The lifetime is a whole number of days from 1 to ${maxLifetimeDays}.`, field: 'days' };
  if (form.access === 'chosen' && form.actions.length === 0)
    return { problem: 'Check at least one action, or choose everything the account can do.', field: 'actions' };
  return {
    body: {
      ...(form.access === 'chosen' ? { actions: tokenActions.map((a) => a.action).filter((a) => form.actions.includes(a)) } : {}),
      expires_in_days: Number(days),
    },
  };
}

/** A login that is no longer waiting, in words (when the page is opened again); undefined while it waits. */
export function loginStateInWords(state: CliLoginState): string | undefined {
  switch (state) {
    case 'pending':
      return undefined;
    case 'approved':
      return 'Approved: the terminal can now collect its token.';
    case 'collected':
      return 'Approved, and the terminal has collected its token.';
    case 'denied':
      return 'Denied: the terminal got no token.';
    case 'expired':
      return 'Expired: it was not approved within ten minutes. Run svc login again for a new code.';
  }
}

// A code opened while signed out, kept (in localStorage: the mailed sign-in link opens in another
// tab) so the console comes back to it after sign-in; no longer than a login waits.
export const rememberKey = 'svc-console-cli-login';
const rememberMs = 10 * 60_000;

/** What is stored to come back to a code. */
export function rememberEntry(code: string, now = Date.now()): string {
  return JSON.stringify({ code, at: now });
}

/** The code to come back to from what is stored: undefined when none, unreadable, or older than ten minutes. */
export function rememberedCode(stored: string | null | undefined, now = Date.now()): string | undefined {
  if (!stored) return undefined;
  try {
    const entry = JSON.parse(stored) as { code?: unknown; at?: unknown };
    if (typeof entry.code !== 'string' || typeof entry.at !== 'number') return undefined;
    if (entry.at > now || now - entry.at > rememberMs) return undefined;
    return normalUserCode(entry.code);
  } catch {
    return undefined;
  }
}
