// The notice mailed to the account's owner whenever a `svc login` is approved: a console session
// (maybe a stolen one) can let a terminal in for up to a year, and the token it gets outlives the
// session, so the owner hears of every one, with what is needed to tell it apart and undo it.
import type { OutgoingMail } from '../../lib/mail/outbox.js';

export interface ApprovedLogin {
  email: string;
  /** The device's name as the terminal declared it (anyone can choose it). */
  name: string;
  requestedFrom: string;
  approvedFrom: string;
  approvedAt: Date;
  actions: readonly string[] | null;
  tokenDays: number;
  /** Where the owner revokes it: <public origin>/console/tokens. */
  tokensUrl: string;
}

export function cliLoginApprovedMail(m: ApprovedLogin): OutgoingMail {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const actions = m.actions ? m.actions.join(', ') : 'every action';
  const facts: Array<[string, string]> = [
    ['Device (as it named itself)', m.name],
    ['Asked from', m.requestedFrom],
    ['Approved from', m.approvedFrom],
    ['Approved at', m.approvedAt.toISOString()],
    ['The token may', actions],
    ['For', `${m.tokenDays} days`],
  ];
  const undo = `If this was not you, revoke the token named "${m.name}" at ${m.tokensUrl} and sign out of the console everywhere by revoking its console tokens there too.`;
  return {
    to: m.email,
    subject: 'A terminal signed in to your svc account',
    purpose: 'cli-login-approved',
    text: `A svc login was approved in the console: a terminal can now use a token of your account.\n\n${facts
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n')}\n\n${undo}\n`,
    html: `<p>A <strong>svc login</strong> was approved in the console: a terminal can now use a token of your account.</p><table>${facts
      .map(([k, v]) => `<tr><th align="left">${esc(k)}</th><td>${esc(v)}</td></tr>`)
      .join('')}</table><p>${esc(undo).replace(esc(m.tokensUrl), `<a href="${esc(m.tokensUrl)}">${esc(m.tokensUrl)}</a>`)}</p>`,
  };
}
