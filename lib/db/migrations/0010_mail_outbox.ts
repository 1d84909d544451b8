import type { Knex } from 'knex';

// Outgoing mail (sign-in links, invitations), stored in the transaction that decides to send it and
// delivered later by the one sender that leads the svc-mailer Lease (lib/mail/). A message is due
// while sent_at and failed_at are null and next_attempt_at has passed; each attempt counts in
// attempts, and a failed one leaves its error in last_error. Bodies carry sign-in tokens: they are
// cleared (null) once the message is sent or given up, so only pending mail holds a usable link.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('mail_outbox', (t) => {
    t.bigIncrements('id');
    t.text('to').notNullable();
    t.text('subject').notNullable();
    t.text('text');
    t.text('html');
    t.text('purpose').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable();
    t.timestamp('sent_at', { useTz: true });
    t.timestamp('failed_at', { useTz: true });
    t.text('last_error');
  });
  // The sender's query: pending mail by due time. Finished rows stay out of the index.
  await db.raw('CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL');
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('mail_outbox');
}
