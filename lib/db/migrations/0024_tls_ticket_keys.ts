import type { Knex } from 'knex';

// The TLS session-ticket key ingress-auth's workers and replicas share (lib/tls/ticket-keys.ts,
// docs/decisions/0028-https.md): one 48-byte key set (name, HMAC key, AES key, as Node's
// setTicketKeys takes it) in use at a time, from active_from until the next key's active_from, when
// every process switches. A key is written a lead time before it is used and deleted a while after
// its successor took over; id is the key's name in hex, which every ticket carries in the clear.
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('tls_ticket_keys', (t) => {
    t.text('id').primary();
    t.binary('key').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('active_from', { useTz: true }).notNullable().unique();
  });
  await db.raw('alter table tls_ticket_keys add constraint tls_ticket_keys_length check (octet_length(key) = 48)');
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('tls_ticket_keys');
}
