// Email invitations (spec "Email invitations" 1, 2 and 5). The App controller decides which
// addresses the policies in force list (App status.policyEmails, whatever changed the policy: a
// deploy or a kubectl edit); this carries the decision out in PostgreSQL for each App change the
// API leader sees. Once the controller has rolled out the spec as applied (Live at the observed
// generation) and the app has a URL, every address newly added to its `emails` policy gets a
// reusable sign-in link once; an address still listed is not mailed again; an address no longer in
// force loses its links and its app-user sessions. The recipients mailed so far are kept in
// auth_recipients: the insert of a recipient row decides which replica mails.
import type { Knex } from 'knex';
import type { Logger } from '../logger.js';
import type { App } from '../resources/index.js';
import { policyEmails } from './identity.js';
import { LinkStore } from './links.js';
import { SessionStore } from './sessions.js';
import { loginUrl } from '../contract.js';
import { accountIdOfNamespace } from '../accounts.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  purpose: string;
}

/** Enqueues mail, inside the caller's transaction when given one (lib/mail/outbox.ts). */
export interface MailEnqueuer {
  enqueue(msg: MailMessage, trx?: Knex): Promise<unknown>;
}

export class Invitations {
  private readonly links: LinkStore;
  private readonly sessions: SessionStore;

  constructor(
    private readonly db: Knex,
    private readonly mail: MailEnqueuer,
    private readonly log: Logger,
    /** The app's URL for links; undefined while it has none (not served yet). */
    private readonly appUrl: (app: App) => string | undefined,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.links = new LinkStore(db, clock);
    this.sessions = new SessionStore(db, clock);
  }

  /** What an App's last pass acted on, per App uid: a pass that would see the same does nothing. */
  private readonly seen = new Map<string, string>();

  /**
   * Brings an app's invitations in line with what its controller reported; returns who was invited
   * and who removed. Nothing before the controller has reported (status.policyEmails absent).
   */
  async sync(app: App): Promise<{ invited: string[]; removed: string[] }> {
    const inForce = app.status?.policyEmails;
    if (inForce === undefined) return { invited: [], removed: [] };
    const url = this.appUrl(app);
    const appUid = app.metadata.uid!;
    const rolledOut = app.status?.observedGeneration === app.metadata.generation && app.status?.rollout?.state === 'Live';
    const wanted = rolledOut && url ? policyEmails(app.spec.auth) : new Set<string>();
    const key = JSON.stringify([inForce, [...wanted]]);
    if (this.seen.get(appUid) === key) return { invited: [], removed: [] };
    // Only an account's Apps: one in a namespace that is no account's in this database (made with
    // kubectl outside the platform, or another installation's on a shared cluster) is not this
    // platform's to mail about. Not remembered as seen: its account may yet be recorded.
    if (!(await accountIdOfNamespace(this.db, app.metadata.namespace!))) return { invited: [], removed: [] };
    const keep = new Set(inForce);
    const had = new Set(
      (await this.db('auth_recipients').where({ app_uid: appUid }).select<Array<{ email: string }>>('email')).map((r) => r.email),
    );
    const invited: string[] = [];
    const removed: string[] = [];
    for (const email of wanted) {
      if (had.has(email) || !keep.has(email)) continue;
      const sent = await this.db.transaction(async (trx) => {
        const rows = (await trx('auth_recipients')
          .insert({ app_uid: appUid, email, invited_at: this.clock() })
          .onConflict(['app_uid', 'email'])
          .ignore()
          .returning('email')) as unknown[];
        if (!rows.length) return false;
        const token = await this.links.emailLink(appUid, email, '/', trx);
        await this.mail.enqueue(invitationMail(app.metadata.name!, url!, email, token), trx);
        return true;
      });
      if (sent) invited.push(email);
    }
    for (const email of had) {
      if (keep.has(email)) continue;
      await this.db.transaction(async (trx) => {
        await trx('auth_recipients').where({ app_uid: appUid, email }).delete();
        await this.links.revokeEmail(appUid, email, trx);
      });
      await this.sessions.revoke(appUid, { email });
      removed.push(email);
    }
    this.seen.set(appUid, key);
    if (invited.length || removed.length)
      this.log.info(
        { app: app.metadata.name, ns: app.metadata.namespace, invited: invited.length, removed: removed.length },
        'Invitations updated',
      );
    return { invited, removed };
  }

  /** An App deleted: its next namesake starts afresh. */
  forget(appUid: string): void {
    this.seen.delete(appUid);
  }
}

export function invitationMail(app: string, appUrl: string, email: string, token: string): MailMessage {
  const url = loginUrl('/', { origin: appUrl, fragment: `token=${token}` });
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return {
    to: email,
    subject: `You are invited to ${app}`,
    purpose: 'invitation',
    text: `You can now sign in to ${app} at ${appUrl}.\n\nYour sign-in link (it keeps working while you are invited):\n\n${url}\n`,
    html: `<p>You can now sign in to <strong>${esc(app)}</strong>.</p><p><a href="${esc(url)}">Sign in</a></p><p>The link keeps working while you are invited.</p>`,
  };
}
