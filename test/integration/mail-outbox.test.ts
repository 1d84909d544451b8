import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { migrateLatest } from '../../lib/db/migrate.js';
import { createLogger } from '../../lib/logger.js';
import { MailOutbox, type MailTransport } from '../../lib/mail/outbox.js';
import { MailSender, type MailSenderOptions } from '../../lib/mail/sender.js';
import { smtpTransport, type SmtpTransport } from '../../lib/mail/transport.js';
import { freshDatabase } from '../support/db.js';
import { kubeConfig, statusOf, testNamespace } from '../support/kube.js';
import { startTestSmtp, type ReceivedMail, type TestSmtp } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

const from = 'Sign-in <no-reply@apps.test>';
const sec = 1000;

interface OutboxRow {
  id: string;
  to: string;
  subject: string;
  text: string | null;
  html: string | null;
  attempts: number;
  next_attempt_at: Date;
  sent_at: Date | null;
  failed_at: Date | null;
  last_error: string | null;
}

describe('mail outbox and its leader-elected sender (real PostgreSQL, SMTP server and Lease)', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let smtp: TestSmtp;
  let transport: SmtpTransport;
  let ns: Awaited<ReturnType<typeof testNamespace>>;
  const kc = kubeConfig();
  const leases = kc.makeApiClient(k8s.CoordinationV1Api);
  const senders: MailSender[] = [];
  const silent = createLogger('mail-test', 'silent');

  const row = async (id: string) => (await fresh.db('mail_outbox').where({ id }).first()) as OutboxRow;
  const withSubject = (subject: string) => (m: ReceivedMail) => m.headers.subject === subject;
  const subjectsReceived = (prefix: string) => smtp.received.map((m) => m.headers.subject ?? '').filter((s) => s.startsWith(prefix));

  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
    smtp = await startTestSmtp();
    transport = smtpTransport(smtp.url, from);
    ns = await testNamespace(kc.makeApiClient(k8s.CoreV1Api), 'mail');
  });
  after(async () => {
    await Promise.all(senders.map((s) => s.stop()));
    transport?.close();
    await smtp?.close();
    await fresh?.dispose();
    await ns?.dispose();
  });

  it('delivers an enqueued message with its To, Subject and From, then erases its body', async () => {
    const outbox = new MailOutbox(fresh.db);
    const { id } = await outbox.enqueue({
      to: 'ada@example.test',
      subject: 'Sign in to shop',
      text: 'Open https://shop.apps.test/#token=secret1',
      html: '<a href="https://shop.apps.test/#token=secret1">Sign in</a>',
      purpose: 'sign-in-link',
    });
    const report = await outbox.deliverDue(transport);
    assert.deepEqual(
      report.outcomes.map((o) => [o.id, o.result, o.attempts]),
      [[id, 'sent', 1]],
    );

    const mail = await smtp.waitFor(withSubject('Sign in to shop'));
    assert.deepEqual(mail.to, ['ada@example.test']);
    assert.equal(mail.from, 'no-reply@apps.test');
    assert.equal(mail.headers.to, 'ada@example.test');
    assert.equal(mail.headers.from, '"Sign-in" <no-reply@apps.test>'); // nodemailer quotes the display name
    assert.match(mail.raw, /secret1/);
    const stored = await row(id);
    assert.ok(stored.sent_at);
    assert.equal(stored.attempts, 1);
    assert.equal(stored.text, null, 'the sign-in token does not stay in the database');
    assert.equal(stored.html, null);
  });

  it('never sends a message enqueued in a transaction that rolls back', async () => {
    const outbox = new MailOutbox(fresh.db);
    await assert.rejects(
      fresh.db.transaction(async (trx) => {
        await outbox.enqueue({ to: 'bob@example.test', subject: 'Rolled back', text: 'never', purpose: 'sign-in-link' }, trx);
        throw new Error('the sign-in was refused after all');
      }),
      /refused after all/,
    );
    await fresh.db.transaction(async (trx) => {
      await outbox.enqueue({ to: 'bob@example.test', subject: 'Committed', text: 'yes', purpose: 'sign-in-link' }, trx);
    });
    const report = await outbox.deliverDue(transport);
    assert.equal(report.claimed, 1);
    await smtp.waitFor(withSubject('Committed'));
    assert.deepEqual(subjectsReceived('Rolled back'), []);
    assert.equal(
      await fresh
        .db('mail_outbox')
        .where({ subject: 'Rolled back' })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r?.n)),
      0,
    );
  });

  it('retries with a doubling delay while the server refuses, and delivers once it accepts', async () => {
    let now = new Date('2030-01-01T00:00:00Z').getTime();
    const outbox = new MailOutbox(fresh.db, { clock: () => new Date(now) });
    smtp.refuse(451);
    const { id } = await outbox.enqueue({ to: 'cy@example.test', subject: 'Retried', text: 'hello', purpose: 'sign-in-link' });

    const first = await outbox.deliverDue(transport);
    assert.deepEqual(
      first.outcomes.map((o) => [o.result, o.attempts]),
      [['retry', 1]],
    );
    assert.equal((await row(id)).next_attempt_at.getTime(), now + 10 * sec);
    assert.match((await row(id)).last_error ?? '', /451/);

    now += 9 * sec;
    assert.equal((await outbox.deliverDue(transport)).claimed, 0, 'not due before its delay');
    now += 1 * sec;
    assert.deepEqual(
      (await outbox.deliverDue(transport)).outcomes.map((o) => [o.result, o.attempts]),
      [['retry', 2]],
    );
    assert.equal((await row(id)).next_attempt_at.getTime(), now + 20 * sec);
    assert.equal(smtp.refusals, 2);

    smtp.accept();
    now += 20 * sec;
    assert.deepEqual(
      (await outbox.deliverDue(transport)).outcomes.map((o) => [o.result, o.attempts]),
      [['sent', 3]],
    );
    await smtp.waitFor(withSubject('Retried'));
    const stored = await row(id);
    assert.equal(stored.attempts, 3);
    assert.equal(stored.sent_at?.getTime(), now);
    assert.deepEqual(subjectsReceived('Retried'), ['Retried']);
  });

  it('gives up after the last attempt, and at once when the server refuses the recipient for good', async () => {
    let now = new Date('2031-01-01T00:00:00Z').getTime();
    const outbox = new MailOutbox(fresh.db, { clock: () => new Date(now), retry: { maxAttempts: 3 } });
    try {
      smtp.refuse(451);
      const { id } = await outbox.enqueue({ to: 'dee@example.test', subject: 'Never accepted', text: 'token', purpose: 'invitation' });
      const results = [];
      for (const wait of [0, 10, 20]) {
        now += wait * sec;
        results.push(...(await outbox.deliverDue(transport)).outcomes.map((o) => o.result));
      }
      assert.deepEqual(results, ['retry', 'retry', 'failed']);
      const gaveUp = await row(id);
      assert.equal(gaveUp.failed_at?.getTime(), now);
      assert.equal(gaveUp.attempts, 3);
      assert.equal(gaveUp.text, null);
      now += 3600 * sec;
      assert.equal((await outbox.deliverDue(transport)).claimed, 0, 'a given-up message is not tried again');

      smtp.refuse(550);
      const bounced = await outbox.enqueue({ to: 'nobody@example.test', subject: 'No such mailbox', text: 'token', purpose: 'invitation' });
      assert.deepEqual(
        (await outbox.deliverDue(transport)).outcomes.map((o) => [o.result, o.attempts]),
        [['failed', 1]],
      );
      assert.match((await row(bounced.id)).last_error ?? '', /550/);
    } finally {
      smtp.accept();
    }
  });

  it('lets concurrent deliverers claim disjoint messages: each is sent once', async () => {
    const sentBy = new Map<string, string[]>();
    const slow = (name: string): MailTransport => ({
      async send(msg) {
        await new Promise((r) => setTimeout(r, 20));
        await transport.send(msg);
        sentBy.set(name, [...(sentBy.get(name) ?? []), msg.subject]);
      },
    });
    const a = new MailOutbox(fresh.db, { batchSize: 2 });
    const b = new MailOutbox(fresh.db, { batchSize: 2 });
    for (let i = 0; i < 12; i++)
      await a.enqueue({ to: `p${i}@example.test`, subject: `Concurrent ${i}`, text: 'x', purpose: 'sign-in-link' });
    const drain = async (outbox: MailOutbox, t: MailTransport) => {
      while ((await outbox.deliverDue(t)).claimed > 0);
    };
    await Promise.all([drain(a, slow('a')), drain(b, slow('b'))]);
    await eventually('12 messages', () => subjectsReceived('Concurrent ').length >= 12);
    assert.deepEqual(subjectsReceived('Concurrent ').sort(), Array.from({ length: 12 }, (_, i) => `Concurrent ${i}`).sort());
    assert.ok(sentBy.get('a')?.length && sentBy.get('b')?.length, 'both deliverers did part of the work');
  });

  it('two senders on one Lease: only the leader sends, each message once; the other takes over when it stops', async () => {
    // A long poll: prompt delivery below is the enqueue's NOTIFY waking the leader.
    const options = (name: string): MailSenderOptions => ({
      db: fresh.db,
      databaseUrl: fresh.url,
      kc,
      mail: { smtpUrl: smtp.url, from: `${name}@mailer.test` },
      log: silent,
      lease: { namespace: ns.name, name: 'svc-mailer', renewMs: 1000, retryMs: 300 },
      pollMs: 60_000,
    });
    const a = new MailSender(options('a'));
    const b = new MailSender(options('b'));
    senders.push(a, b);
    a.start();
    b.start();
    const holder = async () => (await leases.readNamespacedLease({ namespace: ns.name, name: 'svc-mailer' })).spec?.holderIdentity;
    // The leader's LISTEN session: once it is there, mail enqueued afterwards reaches it by NOTIFY.
    const listening = async () => {
      const r = await fresh.db.raw<{ rows: Array<{ n: number }> }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN svc_mail_outbox'",
      );
      return r.rows[0]!.n === 1;
    };

    const leader = await eventually('a leader', () => [a, b].find((s) => s.isLeader));
    const follower = leader === a ? b : a;
    assert.equal(follower.isLeader, false);
    assert.equal(await holder(), leader.identity);
    await eventually('the leader to listen', listening);
    const outbox = new MailOutbox(fresh.db);
    for (let i = 0; i < 10; i++) {
      const msg = { to: `q${i}@example.test`, subject: `Fleet ${i}`, text: 'x', purpose: 'sign-in-link' };
      if (i % 2) await fresh.db.transaction((trx) => outbox.enqueue(msg, trx));
      else await outbox.enqueue(msg);
    }
    await eventually('10 messages', () => subjectsReceived('Fleet ').length >= 10, { timeoutMs: 10_000 });
    const senderOf = (prefix: string) => new Set(smtp.received.filter((m) => m.headers.subject?.startsWith(prefix)).map((m) => m.from));
    assert.deepEqual(senderOf('Fleet '), new Set([`${leader === a ? 'a' : 'b'}@mailer.test`]));

    await leader.stop();
    await eventually('the follower to lead', () => follower.isLeader, { timeoutMs: 10_000 });
    assert.equal(await holder(), follower.identity);
    await eventually('the new leader to listen', listening);
    for (let i = 0; i < 5; i++)
      await outbox.enqueue({ to: `r${i}@example.test`, subject: `Takeover ${i}`, text: 'x', purpose: 'sign-in-link' });
    await eventually('5 more messages', () => subjectsReceived('Takeover ').length >= 5, { timeoutMs: 10_000 });
    assert.deepEqual(senderOf('Takeover '), new Set([`${follower === a ? 'a' : 'b'}@mailer.test`]));

    const expected = [...Array.from({ length: 10 }, (_, i) => `Fleet ${i}`), ...Array.from({ length: 5 }, (_, i) => `Takeover ${i}`)];
    assert.deepEqual([...subjectsReceived('Fleet '), ...subjectsReceived('Takeover ')].sort(), expected.sort());
    const rows = await fresh
      .db('mail_outbox')
      .where('subject', 'like', 'Fleet %')
      .orWhere('subject', 'like', 'Takeover %')
      .select<OutboxRow[]>('attempts', 'sent_at');
    assert.equal(rows.length, 15);
    assert.ok(rows.every((r) => r.sent_at && r.attempts === 1));
    await follower.stop();
  });

  it('without an SMTP URL logs once, does not campaign, and keeps mail queued', async () => {
    const lines: string[] = [];
    const log = createLogger('mail-test', 'info', { write: (line: string) => void lines.push(line) });
    const sender = new MailSender({
      db: fresh.db,
      databaseUrl: fresh.url,
      kc,
      mail: { smtpUrl: undefined, from },
      log,
      lease: { namespace: ns.name, name: 'svc-mailer-off' },
    });
    senders.push(sender);
    sender.start();
    sender.start();
    const { id } = await new MailOutbox(fresh.db).enqueue({
      to: 'eve@example.test',
      subject: 'Queued',
      text: 'x',
      purpose: 'sign-in-link',
    });
    assert.equal(lines.filter((l) => l.includes('SVC_SMTP_URL is not set')).length, 1);
    assert.equal(sender.isLeader, false);
    await assert.rejects(leases.readNamespacedLease({ namespace: ns.name, name: 'svc-mailer-off' }), (err) => statusOf(err) === 404);
    await sender.stop();
    const queued = await row(id);
    assert.equal(queued.sent_at, null);
    assert.equal(queued.text, 'x');
  });
});
