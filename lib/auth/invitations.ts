// Email invitations (spec "Email invitations" 1, 2 and 5): after a deploy goes live on an app that
// has a URL, every address newly added to its `emails` policy gets a reusable sign-in link once;
// an address still listed is not mailed again; an address no longer listed loses its links and
// its app-user sessions. The recipients mailed so far are kept in auth_recipients. Every API
// replica may run this for the same deploy: the insert of a recipient row decides which one mails.
import type { Knex } from 'knex';
import type { Logger } from '../logger.js';
import type { App } from '../resources/index.js';
import { policyEmails } from './identity.js';
import { LinkStore } from './links.js';
import { SessionStore } from './sessions.js';
import { loginUrl } from '../contract.js';

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

  /** Brings an app's invitations in line with its live policy; returns who was invited and who removed. */
  async sync(app: App): Promise<{ invited: string[]; removed: string[] }> {
    const url = this.appUrl(app);
    const appUid = app.metadata.uid!;
    const wanted = policyEmails(app.spec.auth);
    const had = new Set(((await this.db('auth_recipients').where({ app_uid: appUid }).select('email')) as Array<{ email: string }>).map((r) => r.email));
    const invited: string[] = [];
    const removed: string[] = [];
    if (url) {
      for (const email of wanted) {
        if (had.has(email)) continue;
        const sent = await this.db.transaction(async (trx) => {
          const rows = (await trx('auth_recipients').insert({ app_uid: appUid, email, invited_at: this.clock() }).onConflict(['app_uid', 'email']).ignore().returning('email')) as unknown[];
          if (!rows.length) return false;
          const token = await this.links.emailLink(appUid, email, '/', trx);
          await this.mail.enqueue(invitationMail(app.metadata.name!, url, email, token), trx);
          return true;
        });
        if (sent) invited.push(email);
      }
    }
    for (const email of had) {
      if (wanted.has(email)) continue;
      await this.db.transaction(async (trx) => {
        await trx('auth_recipients').where({ app_uid: appUid, email }).delete();
        await this.links.revokeEmail(appUid, email, trx);
      });
      await this.sessions.revoke(appUid, { email });
      removed.push(email);
    }
    if (invited.length || removed.length) this.log.info({ app: app.metadata.name, ns: app.metadata.namespace, invited: invited.length, removed: removed.length }, 'Invitations updated');
    return { invited, removed };
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
