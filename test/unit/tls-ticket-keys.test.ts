// The TLS session-ticket key shared by ingress-auth's workers and replicas (lib/tls/ticket-keys.ts,
// docs/decisions/0028-https.md), without a database: which key is in use at a time, when the next
// switch is, which keys are deleted, when a key is written (the first, the next one a lead ahead, a
// forced one, and a second replica planning after the first writing nothing). Then the wiring, with
// a key source fed by hand: two HTTPS listeners built by startIngress resume each other's tickets
// (TLS 1.3, SNI) while they share a key, a third without it does not, and a switch reaches both.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type { RouteSource } from '../../ingress-auth/routes.js';
import { startIngress, type Ingress } from '../../ingress-auth/server.js';
import { CertificateIndex, type CertificateSource } from '../../ingress-auth/tls/certificates.js';
import { loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import {
  activeKeyAt,
  keysToDelete,
  nextSwitchAt,
  planTicketKeys,
  ticketKeyBytes,
  type TicketKeyPolicy,
  type TicketKeySource,
  type TicketKeyTimes,
} from '../../lib/tls/ticket-keys.js';
import { certificateFor } from '../support/certificates.js';
import { offlineKubeConfig } from '../support/kube.js';

const min = 60_000;
const hour = 60 * min;
const t0 = Date.parse('2030-01-01T00:00:00Z');
const policy: TicketKeyPolicy = { rotationMs: 12 * hour, leadMs: 10 * min, retainMs: 10 * min };
const key = (id: string, activeFrom: number, createdAt = activeFrom - policy.leadMs): TicketKeyTimes => ({ id, createdAt, activeFrom });

describe('TLS ticket keys: which key, when', () => {
  const a = key('a', t0);
  const b = key('b', t0 + 12 * hour);
  const c = key('c', t0 + 24 * hour);

  it('the key in use at t is the latest whose active_from is not after t, in whatever order the keys come', () => {
    assert.equal(activeKeyAt([], t0), undefined);
    assert.equal(activeKeyAt([a], t0 - 1), undefined);
    assert.equal(activeKeyAt([a], t0)?.id, 'a');
    assert.equal(activeKeyAt([c, a, b], t0 + 12 * hour - 1)?.id, 'a');
    assert.equal(activeKeyAt([c, b, a], t0 + 12 * hour)?.id, 'b');
    assert.equal(activeKeyAt([b, a, c], t0 + 100 * hour)?.id, 'c');
  });

  it('the next switch is the earliest active_from after t; none once the latest key is in use', () => {
    assert.equal(nextSwitchAt([], t0), undefined);
    assert.equal(nextSwitchAt([a, b, c], t0), t0 + 12 * hour);
    assert.equal(nextSwitchAt([c, b, a], t0 + 12 * hour), t0 + 24 * hour);
    assert.equal(nextSwitchAt([a, b], t0 + 12 * hour), undefined);
    assert.equal(nextSwitchAt([a], t0 - 1), t0, 'a key not yet in use is a switch');
  });

  it('deletes a key once its successor has been in use longer than retainMs, never the key in use or one waiting', () => {
    assert.deepEqual(keysToDelete([a], t0 + 100 * hour, policy.retainMs), []);
    assert.deepEqual(keysToDelete([a, b], t0 + 12 * hour, policy.retainMs), [], 'just switched: a late clock may still use a');
    assert.deepEqual(keysToDelete([b, a], t0 + 12 * hour + policy.retainMs, policy.retainMs), []);
    assert.deepEqual(keysToDelete([b, a], t0 + 12 * hour + policy.retainMs + 1, policy.retainMs), ['a']);
    assert.deepEqual(keysToDelete([c, b, a], t0 + 24 * hour + policy.retainMs + 1, policy.retainMs), ['a', 'b']);
    assert.deepEqual(keysToDelete([a, b], t0 + 11 * hour, policy.retainMs), [], 'the next key waiting deletes nothing');
  });
});

describe('TLS ticket keys: what to write', () => {
  it('the first key is used at once', () => {
    assert.deepEqual(planTicketKeys([], t0, policy), { create: { activeFrom: t0 }, delete: [] });
  });

  it('two replicas planning at once under the lock: the second sees the first one’s key and writes nothing', () => {
    const first = planTicketKeys([], t0, policy);
    assert.ok(first.create);
    const written = key('first', first.create.activeFrom, t0);
    assert.deepEqual(planTicketKeys([written], t0 + 5, policy), { delete: [] });
    // The same at rotation time: one next key.
    const due = t0 + 12 * hour - policy.leadMs;
    const next = planTicketKeys([written], due, policy);
    assert.deepEqual(next.create, { activeFrom: t0 + 12 * hour });
    assert.deepEqual(planTicketKeys([written, key('next', next.create.activeFrom, due)], due + 5, policy), { delete: [] });
  });

  it('two keys with the same active_from (which the table forbids) still resolve to one for every process', () => {
    const x = key('x', t0);
    const y = key('y', t0);
    assert.equal(activeKeyAt([x, y], t0)?.id, activeKeyAt([y, x], t0)?.id);
    assert.deepEqual(planTicketKeys([y, x], t0 + 1, policy), { delete: [] });
  });

  it('the next key is written leadMs before the current one has been used rotationMs, not before', () => {
    const a = key('a', t0);
    assert.deepEqual(planTicketKeys([a], t0 + 12 * hour - policy.leadMs - 1, policy), { delete: [] });
    assert.deepEqual(planTicketKeys([a], t0 + 12 * hour - policy.leadMs, policy).create, { activeFrom: t0 + 12 * hour });
    // Nobody came by for days (every replica down): the next key still gets its whole lead.
    const late = t0 + 72 * hour;
    assert.deepEqual(planTicketKeys([a], late, policy).create, { activeFrom: late + policy.leadMs });
    // While the next one waits, nothing more is written; once it is in use, its own rotation counts.
    const b = key('b', t0 + 12 * hour);
    assert.deepEqual(planTicketKeys([a, b], t0 + 12 * hour - 1, policy), { delete: [] });
    assert.deepEqual(planTicketKeys([a, b], t0 + 12 * hour + policy.retainMs + 1, policy), { delete: ['a'] });
    assert.deepEqual(planTicketKeys([b], t0 + 24 * hour - policy.leadMs, policy).create, { activeFrom: t0 + 24 * hour });
  });

  it('a forced rotation writes the next key leadMs ahead, unless one is already waiting', () => {
    const a = key('a', t0);
    const at = t0 + hour;
    assert.deepEqual(planTicketKeys([a], at, policy, true), { create: { activeFrom: at + policy.leadMs }, delete: [] });
    assert.deepEqual(planTicketKeys([a, key('b', at + policy.leadMs)], at + 1, policy, true), { delete: [] });
  });

  it('no key in use (only one waiting, as a clock far behind would see): one is written for now', () => {
    assert.deepEqual(planTicketKeys([key('b', t0 + hour)], t0, policy).create, { activeFrom: t0 });
  });
});

/** A key fed by hand to every listener following it: what the stores on one table do at each switch, without PostgreSQL. */
class HandFedKeys {
  private readonly applies = new Set<(keys: Buffer) => void>();
  constructor(private keys: Buffer) {}
  /** The source one listener follows, as each process has its own store. */
  source(): TicketKeySource {
    let mine: ((keys: Buffer) => void) | undefined;
    return {
      start: async (apply) => {
        mine = apply;
        this.applies.add(apply);
        apply(this.keys);
      },
      stop: async () => {
        if (mine) this.applies.delete(mine);
      },
    };
  }
  switchTo(keys: Buffer): void {
    this.keys = keys;
    for (const apply of this.applies) apply(keys);
  }
}

describe('TLS ticket keys: ingress-auth HTTPS listeners sharing one', () => {
  const log = createLogger('ingress-auth', 'silent');
  const appsDomain = 'apps.localhost';
  const servername = `shop.${appsDomain}`;
  const shared = new HandFedKeys(randomBytes(ticketKeyBytes));
  const other = new HandFedKeys(randomBytes(ticketKeyBytes));
  const listeners: Ingress[] = [];
  let ports: number[] = [];

  before(async () => {
    const pem = await certificateFor(`*.${appsDomain}`);
    const config = loadConfig({ SVC_APPS_DOMAIN: appsDomain, SVC_LOG_LEVEL: 'silent' }, { exists: () => false });
    const routes: RouteSource = {
      start: async () => undefined,
      stop: async () => undefined,
      app: () => undefined,
      backends: () => [],
      whenBackends: async () => [],
      origins: () => new Set(),
    };
    // Each listener its own index, as each worker has: its own SecureContexts, only the keys shared.
    const certificates = (): CertificateSource => {
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
    };
    const challenges = { start: async () => undefined, stop: async () => undefined, answer: () => undefined };
    // Two sharing the key (two workers or replicas), and one keeping its own (a process without the store).
    for (const ticketKeys of [shared, shared, other]) {
      listeners.push(
        await startIngress({
          config,
          kc: offlineKubeConfig(),
          log,
          routes,
          host: '127.0.0.1',
          port: 0,
          tlsPort: 0,
          certificates: certificates(),
          challenges,
          ticketKeys: ticketKeys.source(),
        }),
      );
    }
    ports = listeners.map((l) => Number(new URL(l.tlsUrl!).port));
  });

  after(async () => {
    await Promise.all(listeners.map((l) => l.close()));
  });

  it('a TLS 1.3 ticket from one resumes on the other; not on a listener with its own key', async () => {
    const first = await handshake(ports[0]!, servername);
    assert.equal(first.reused, false);
    assert.ok(first.session, 'a ticket was received');
    assert.equal((await handshake(ports[1]!, servername, first.session)).reused, true, 'resumed on the second listener');
    const again = await handshake(ports[0]!, servername);
    assert.equal((await handshake(ports[2]!, servername, again.session)).reused, false, 'no resumption without the shared key');
    // Both directions.
    const fromSecond = await handshake(ports[1]!, servername);
    assert.equal((await handshake(ports[0]!, servername, fromSecond.session)).reused, true);
  });

  it('after a switch both take the new key: an old ticket no longer resumes, a new one resumes on either', async () => {
    const before = await handshake(ports[0]!, servername);
    shared.switchTo(randomBytes(ticketKeyBytes));
    assert.equal(
      (await handshake(ports[1]!, servername, before.session)).reused,
      false,
      'one key set at a time: the old ticket is refused',
    );
    const after = await handshake(ports[1]!, servername);
    assert.equal((await handshake(ports[0]!, servername, after.session)).reused, true);
  });
});

/** A TLS 1.3 connection with this SNI name, offering `session`; whether it was resumed, and the last ticket received. */
function handshake(port: number, servername: string, session?: Buffer): Promise<{ reused: boolean; session: Buffer | undefined }> {
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
