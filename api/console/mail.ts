// The console's sign-in mail: the one-time link, how long it works, and what to do with a mail one
// did not ask for. Text and HTML, as ingress-auth's sign-in mail is made.
import type { OutgoingMail } from '../../lib/mail/outbox.js';
import { codeLifetimeMs } from './codes.js';

/** Where a mailed code is redeemed: GET <origin>/console/auth?code=<code> (api/console/routes.ts). */
export function signInLink(origin: string, code: string): string {
  return `${origin}/console/auth?code=${encodeURIComponent(code)}`;
}

export function consoleSignInMail(m: { email: string; link: string }): OutgoingMail {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const minutes = codeLifetimeMs / 60_000;
  return {
    to: m.email,
    subject: 'Sign in to the svc console',
    purpose: 'console-sign-in',
    text: `Sign in to the svc console with this link:\n\n${m.link}\n\nIt works once, for ${minutes} minutes. If you did not ask for it, ignore this message.\n`,
    html: `<p>Sign in to the <strong>svc console</strong>:</p><p><a href="${esc(m.link)}">${esc(m.link)}</a></p><p>It works once, for ${minutes} minutes. If you did not ask for it, ignore this message.</p>`,
  };
}

/**
 * The notice mailed whenever a passkey is added to an account: a console session (maybe a stolen
 * one) that adds a passkey keeps a way in after the session is gone, so the owner hears of each.
 */
export function passkeyAddedMail(m: { email: string; addedFrom: string; addedAt: Date; passkeysUrl: string }): OutgoingMail {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const when = `${m.addedAt.toISOString()}, from ${m.addedFrom}`;
  const undo = `If this was not you, remove it at ${m.passkeysUrl}, and revoke the console sessions at the tokens page.`;
  return {
    to: m.email,
    subject: 'A passkey was added to your svc account',
    purpose: 'console-passkey-added',
    text: `A passkey that signs in to the svc console was added to your account at ${when}.\n\n${undo}\n`,
    html: `<p>A passkey that signs in to the <strong>svc console</strong> was added to your account at ${esc(when)}.</p><p>${esc(
      undo,
    ).replace(esc(m.passkeysUrl), `<a href="${esc(m.passkeysUrl)}">${esc(m.passkeysUrl)}</a>`)}</p>`,
  };
}
