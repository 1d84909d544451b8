// Swap orders: how the App controller tells a runtime machine to serve another artifact in place
// (a content deploy, a rollback; docs/decisions/0036-deploys-under-a-second.md). The machine's
// control port is reachable from the platform and from the app's own machines (its NetworkPolicy),
// and the runtime runs next to tenant code: so an order is signed (Ed25519) by the controllers,
// names the one Pod it is for, expires within a minute, and a machine takes none older than the
// last it took. The runtime holds only the public key: handler code that reads its environment
// can verify orders, never make one. The signing key is derived from the artifact key the
// controllers already hold (no second secret to distribute), under its own purpose.
import { digestPattern } from './artifacts/store.js';
import { createHmac, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/** The runtime's control port, unless the app's own port is that one. */
export function controlPortFor(appPort: number): number {
  return appPort === 9099 ? 9098 : 9099;
}

export interface SwapOrder {
  /** The Pod the order is for: its name, and its uid (a Pod made again under the same name is another). */
  pod: string;
  uid: string;
  digest: string;
  /** Where to fetch it, and the artifact credential that opens it (lib/artifacts/credential.ts). */
  url: string;
  token?: string | undefined;
  /** When the controller issued it and until when it holds, ms since the epoch. */
  issuedAt: number;
  expiresAt: number;
}

/** How long an order holds: long enough for a clock a little off, too short to keep for later. */
export const swapOrderTtlMs = 60_000;

const pkcs8Ed25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const spkiEd25519 = Buffer.from('302a300506032b6570032100', 'hex');
const purpose = 'svc-machine-control';

export interface ControlKeys {
  privateKey: KeyObject;
  /** The public key as machines are given it: 32 bytes, base64url. */
  publicKey: string;
}

/** The controllers' signing key and its public half, derived from the artifact key. */
export function controlKeys(artifactKey: Buffer): ControlKeys {
  const seed = createHmac('sha256', artifactKey).update(purpose).digest();
  const privateKey = createPrivateKey({ key: Buffer.concat([pkcs8Ed25519, seed]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { privateKey, publicKey: spki.subarray(spkiEd25519.length).toString('base64url') };
}

function message(body: string): Buffer {
  return Buffer.from(`${purpose}\n${body}`);
}

/** The order as sent: `<base64url JSON>.<base64url signature>`. */
export function signSwapOrder(privateKey: KeyObject, order: SwapOrder): string {
  const body = Buffer.from(JSON.stringify(order)).toString('base64url');
  return `${body}.${sign(null, message(body), privateKey).toString('base64url')}`;
}

export type OrderCheck = { ok: true; order: SwapOrder } | { ok: false; error: string };

/**
 * The order in `wire` if it is signed by the controllers' key, for `pod`, current at `now`, and
 * not older than `after` (the issue time of the last order the machine took).
 */
export function verifySwapOrder(
  publicKey: string,
  wire: string,
  expect: { pod: string; uid: string; now: number; after?: number },
): OrderCheck {
  const m = /^([A-Za-z0-9_-]{1,8000})\.([A-Za-z0-9_-]{86})$/.exec(wire.trim());
  if (!m) return { ok: false, error: 'a swap order is <base64url body>.<base64url signature>' };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.concat([spkiEd25519, Buffer.from(publicKey, 'base64url')]), format: 'der', type: 'spki' });
  } catch {
    return { ok: false, error: 'this machine has no valid control key' };
  }
  if (!verify(null, message(m[1]!), key, Buffer.from(m[2]!, 'base64url')))
    return { ok: false, error: 'the order is not signed by the platform' };
  let order: SwapOrder;
  try {
    order = JSON.parse(Buffer.from(m[1]!, 'base64url').toString()) as SwapOrder;
  } catch {
    return { ok: false, error: 'the order is not JSON' };
  }
  if (
    typeof order.pod !== 'string' ||
    typeof order.uid !== 'string' ||
    typeof order.digest !== 'string' ||
    !digestPattern.test(order.digest) ||
    typeof order.url !== 'string' ||
    (order.token !== undefined && typeof order.token !== 'string') ||
    !Number.isFinite(order.issuedAt) ||
    !Number.isFinite(order.expiresAt)
  )
    return { ok: false, error: 'the order lacks a field' };
  if (order.pod !== expect.pod || order.uid !== expect.uid)
    return { ok: false, error: `the order is for ${order.pod} (${order.uid}), not this machine` };
  if (order.expiresAt <= expect.now) return { ok: false, error: 'the order has expired' };
  if (expect.after !== undefined && order.issuedAt < expect.after) return { ok: false, error: 'a newer order was taken already' };
  return { ok: true, order };
}

/**
 * An order this machine took, kept in its emptyDir (runtime/control.ts): the last it took (no
 * older is taken after a restart) and the last it served (a restart comes back on its revision).
 * Checked as signed by the controllers and for this Pod, whenever it was issued (it is read after
 * a restart, not taken). The app's code, which can write the emptyDir of a handler tree's machine,
 * can plant only an order the platform made for this very Pod: a revision of its own app, or a
 * time the platform gave.
 */
export function verifyKeptOrder(publicKey: string, wire: string, expect: { pod: string; uid: string }): OrderCheck {
  return verifySwapOrder(publicKey, wire, { ...expect, now: Number.NEGATIVE_INFINITY });
}
