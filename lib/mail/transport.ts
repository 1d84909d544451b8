// SMTP delivery through nodemailer. A message is sent while its outbox row is locked, so the
// timeouts are seconds, not nodemailer's default minutes: a stalled server must not hold a batch.
import nodemailer from 'nodemailer';
import { PermanentMailError, type MailTransport } from './outbox.js';

export interface SmtpTransport extends MailTransport {
  close(): void;
}

/** A transport to the server of an smtp:// or smtps:// URL (credentials in the URL), sending as `from`. */
export function smtpTransport(url: string, from: string): SmtpTransport {
  const mailer = nodemailer.createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }, { from });
  return {
    async send(msg) {
      try {
        await mailer.sendMail({ to: msg.to, subject: msg.subject, text: msg.text, html: msg.html });
      } catch (err) {
        if (refusesRecipientForGood(err)) throw new PermanentMailError((err as Error).message, { cause: err });
        throw err;
      }
    },
    close: () => mailer.close(),
  };
}

// Only a 5xx answer to RCPT TO is final: it is about this recipient. A 5xx to the connection, to
// MAIL FROM or to DATA is as likely our configuration (credentials, sender address) as the message,
// and giving up would burn every queued message until the configuration is fixed.
function refusesRecipientForGood(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e: Error & { code?: unknown; command?: unknown; responseCode?: unknown } = err;
  return e.code === 'EENVELOPE' && e.command === 'RCPT TO' && typeof e.responseCode === 'number' && e.responseCode >= 500;
}
