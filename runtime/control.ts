// A runtime machine's control port: the App controller's swap orders (lib/machine-control.ts) come
// here, `POST /swap` with the signed order as the body. The order is checked before anything is
// fetched: signed by the platform, for this Pod, current, and not older than the last one taken
// (an order replayed by the app's own code on a sibling machine cannot take it back a revision).
// 200 with the digest served once the machine serves it; 422 with the reason when the artifact
// cannot be fetched, verified or put in place (the revision served stays); 403 for an order refused.
// The order served is kept beside the revisions: a container that restarts comes back on what it
// names (servedOrderDigest), and on nothing the app's code could write there instead.
import { readFileSync, writeFileSync } from 'node:fs';
import type { RequestListener } from 'node:http';
import path from 'node:path';
import { verifyKeptOrder, verifySwapOrder } from '../lib/machine-control.js';
import type { Logger } from '../lib/logger.js';
import { writeAtomically } from './fetch.js';
import type { SiteRevisions } from './revisions.js';

const maxOrderBytes = 16 * 1024;
const servedOrder = '.svc-served-order';
const lastOrder = '.svc-last-order';

/** The order kept in `file` under `root`, if it is a genuine one for this Pod. */
function keptOrder(root: string, file: string, expect: { publicKey: string; pod: string; uid: string }) {
  let wire: string;
  try {
    wire = readFileSync(path.join(root, file), 'utf8');
  } catch {
    return undefined;
  }
  const checked = verifyKeptOrder(expect.publicKey, wire, expect);
  return checked.ok ? checked.order : undefined;
}

export interface ControlOptions {
  /** The controllers' public key (base64url), and the Pod this machine is (its name and uid). */
  publicKey: string;
  pod: string;
  uid: string;
  /**
   * The emptyDir the revisions are in: where the issue time of the last order taken is kept (a
   * restarted container takes none older), and the order served.
   */
  root: string;
  revisions: SiteRevisions;
  log: Logger;
  /** How long a fetch retries transient failures. */
  fetchDeadlineMs?: number;
}

/**
 * The digest of the last order this Pod's machine served, if one is kept under `root` and is a
 * genuine order for this Pod (signed, its name and uid): the revision to come back on.
 */
export function servedOrderDigest(root: string, expect: { publicKey: string; pod: string; uid: string }): string | undefined {
  return keptOrder(root, servedOrder, expect)?.digest;
}

/** The swap orders' requests (`POST /swap`), as the machine port (runtime/machine-port.ts) hands them on. */
export function controlRequests(opts: ControlOptions): RequestListener {
  // The last order taken is kept whole, signed: a time the app's code wrote there cannot pin the
  // machine by making every order look older.
  let lastIssued = keptOrder(opts.root, lastOrder, opts)?.issuedAt;
  return (req, res) => {
    const reply = (status: number, body: object) =>
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body) + '\n');
    if (req.url !== '/swap' || req.method !== 'POST') {
      reply(404, { error: 'the control port takes GET /ready and POST /swap only' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxOrderBytes) {
        reply(413, { error: `an order is at most ${maxOrderBytes} bytes` });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (size > maxOrderBytes) return;
      const wire = Buffer.concat(chunks).toString();
      const checked = verifySwapOrder(opts.publicKey, wire, {
        pod: opts.pod,
        uid: opts.uid,
        now: Date.now(),
        ...(lastIssued !== undefined ? { after: lastIssued } : {}),
      });
      if (!checked.ok) {
        opts.log.warn({ error: checked.error }, 'Refused a swap order');
        reply(403, { error: checked.error });
        return;
      }
      const { order } = checked;
      // Taken before it runs: an older order that arrives meanwhile, or after a restart, is refused.
      lastIssued = order.issuedAt;
      try {
        writeFileSync(path.join(opts.root, lastOrder), wire);
      } catch (err) {
        opts.log.warn({ err }, 'Cannot keep the last order taken');
      }
      opts.revisions
        .swap({
          url: order.url,
          digest: order.digest,
          token: order.token,
          ...(opts.fetchDeadlineMs !== undefined ? { deadlineMs: opts.fetchDeadlineMs } : {}),
        })
        .then(
          async (done) => {
            await writeAtomically(path.join(opts.root, servedOrder), wire).catch((err: unknown) =>
              opts.log.warn({ err }, 'Cannot keep the order served: a restart comes back on the spec’s artifact'),
            );
            reply(200, done);
          },
          (err: unknown) => {
            const message = err instanceof Error ? err.message : String(err);
            opts.log.error({ digest: order.digest, error: message }, `Cannot swap to ${order.digest}: ${message}`);
            // Whatever kept it from serving the artifact (a fetch, a bad archive, a full disk), the
            // machine serves what it did: a refusal the controller fails the rollout with.
            reply(422, { error: message });
          },
        );
    });
  };
}
