// The TLS session-ticket key shared through PostgreSQL (lib/tls/ticket-keys.ts,
// docs/decisions/0028-https.md), on a real database: two ingress-auth HTTPS listeners, each with its
// own TicketKeyStore on the same table (standing in for two workers or two replicas), serving the
// same certificate: they write one first key between them, a TLS 1.3 ticket from one resumes on the
// other, a third listener without the store does not resume it, and after a rotation both switch
// at the new key's active_from and resume each other's new tickets (and no longer the old ones).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type { RouteSource } from '../../ingress-auth/routes.js';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import { CertificateIndex, type CertificateSource } from '../../ingress-auth/tls/certificates.js';
import { loadConfig } from '../../lib/config.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import { createLogger } from '../../lib/logger.js';
import { TicketKeyStore, type TicketKeyStoreOptions } from '../../lib/tls/ticket-keys.js';
import { certificateFor, type Pem } from '../support/certificates.js';
import { freshDatabase } from '../support/db.js';
import { offlineKubeConfig } from '../support/kube.js';
import { eventually } from '../support/wait.js';

const log = createLogger('ingress-auth', 'silent');
const appsDomain = 'apps.localhost';
const servername = `shop.${appsDomain}`;

describe('TLS session tickets shared by ingress-auth processes through PostgreSQL', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let pem: Pem;
  const stores: TicketKeyStore[] = [];
  const listeners: Ingress[] = [];
  let ports: number[] = [];
  // A short lead and refresh, so a rotation takes effect within seconds; the rotation itself is forced.
  const storeOptions: Omit<TicketKeyStoreOptions, 'log'> = { rotationMs: 3600_000, leadMs: 2_000, refreshMs: 200, retainMs: 1_000 };

  const listen = (ticketKeys: TicketKeyStore | undefined): Promise<Ingress> =>
    startIngress({
      config: loadConfig({ SVC_APPS_DOMAIN: appsDomain, SVC_LOG_LEVEL: 'silent' }, { exists: () => false }),
      kc: offlineKubeConfig(),
      log,
      routes: noRoutes,
      host: '127.0.0.1',
      port: 0,
      tlsPort: 0,
      certificates: platformCertificate(pem),
      challenges: { start: async () => undefined, stop: async () => undefined, answer: () => undefined },
      ...(ticketKeys ? { ticketKeys } : {}),
    });

  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
    pem = await certificateFor(`*.${appsDomain}`);
    stores.push(new TicketKeyStore(fresh.db, { log, ...storeOptions }), new TicketKeyStore(fresh.db, { log, ...storeOptions }));
    // Started at once, as workers are: they must agree on one first key.
    listeners.push(...(await Promise.all([listen(stores[0]), listen(stores[1])])), await listen(undefined));
    ports = listeners.map((l) => Number(new URL(l.tlsUrl!).port));
  });

  after(async () => {
    await Promise.all(listeners.map((l) => l.close()));
    await fresh?.dispose();
  });

  it('two processes starting at once write one key and both use it', async () => {
    const rows = await fresh.db('tls_ticket_keys').select<Array<{ id: string; key: Buffer }>>('id', 'key');
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.key.length, 48);
    assert.equal(stores[0]!.current()?.id, rows[0]!.id);
    assert.equal(stores[1]!.current()?.id, rows[0]!.id);
  });

  it('a TLS 1.3 ticket from the first resumes on the second, and the other way round', async () => {
    const first = await handshake(ports[0]!);
    assert.equal(first.reused, false);
    assert.ok(first.session, 'a ticket was received');
    assert.equal((await handshake(ports[1]!, first.session)).reused, true, 'resumed on the second process');
    const second = await handshake(ports[1]!);
    assert.equal((await handshake(ports[0]!, second.session)).reused, true, 'resumed on the first process');
  });

  it('control: a process without the store (Node’s own random key) does not resume it', async () => {
    const first = await handshake(ports[0]!);
    assert.equal((await handshake(ports[2]!, first.session)).reused, false);
    // And its own tickets resume only on itself.
    const own = await handshake(ports[2]!);
    assert.equal((await handshake(ports[2]!, own.session)).reused, true, 'resumption works at all on the third');
    assert.equal((await handshake(ports[0]!, own.session)).reused, false);
  });

  it('after a forced rotation both switch at the new key’s active_from and resume each other’s new tickets', async () => {
    const old = stores[0]!.current();
    const beforeRotation = await handshake(ports[0]!);
    const next = await stores[0]!.rotate();
    assert.notEqual(next.id, old?.id);
    assert.ok(next.activeFrom > Date.now(), 'the next key waits its lead');
    // Until then the old key stays in use everywhere: nothing breaks during the lead.
    assert.equal((await handshake(ports[1]!, beforeRotation.session)).reused, true);
    // The second learns of the key at its next refresh, then both switch by their timers.
    await eventually('both processes on the new key', () => stores.every((s) => s.current()?.id === next.id), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
    assert.ok(Date.now() >= next.activeFrom - 50, 'not before its active_from (allowing for timer granularity)');
    // One key set at a time: a ticket sealed with the old key is refused by both.
    assert.equal((await handshake(ports[0]!, beforeRotation.session)).reused, false);
    assert.equal((await handshake(ports[1]!, beforeRotation.session)).reused, false);
    const fromFirst = await handshake(ports[0]!);
    assert.equal((await handshake(ports[1]!, fromFirst.session)).reused, true);
    const fromSecond = await handshake(ports[1]!);
    assert.equal((await handshake(ports[0]!, fromSecond.session)).reused, true);
    // The old key is deleted once its successor has been in use longer than retainMs.
    await eventually(
      'the old key deleted',
      async () => {
        const ids = (await fresh.db('tls_ticket_keys').select<Array<{ id: string }>>('id')).map((r) => r.id);
        return !ids.includes(old!.id) && ids.includes(next.id);
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
  });
});

const noRoutes: RouteSource = {
  start: async () => undefined,
  stop: async () => undefined,
  app: () => undefined,
  backends: () => [],
  whenBackends: async () => [],
  origins: () => new Set(),
};

/** The platform's certificate for `*.<apps domain>`, in an index of each listener's own (its own SecureContexts, as each process has). */
function platformCertificate(pem: Pem): CertificateSource {
  const index = new CertificateIndex({ appsDomain, platformSecret: 'platform-tls', routedIn: () => undefined, log });
  index.upsert({
    metadata: { namespace: 'svc-certificates', name: 'platform-tls', uid: 'uid-platform', resourceVersion: '1' },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': Buffer.from(pem.cert).toString('base64'), 'tls.key': Buffer.from(pem.key).toString('base64') },
  });
  return {
    start: async () => undefined,
    stop: async () => undefined,
    contextFor: (s) => index.contextFor(s),
  };
}

/** A TLS 1.3 connection with the SNI name, offering `session`; whether it was resumed, and the last ticket received. */
function handshake(port: number, session?: Buffer): Promise<{ reused: boolean; session: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    let ticket: Buffer | undefined;
    const socket: TLSSocket = tlsConnect({
      host: '127.0.0.1',
      port,
      servername,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.3',
      ...(session ? { session } : {}),
    });
    socket.on('session', (s: Buffer) => (ticket = s));
    socket.once('secureConnect', () => {
      const reused = socket.isSessionReused();
      // A TLS 1.3 ticket comes after the handshake: a request and its answer carry it in.
      socket.end(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
      socket.resume();
      socket.once('close', () => resolve({ reused, session: ticket }));
    });
    socket.once('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('timed out')));
  });
}
