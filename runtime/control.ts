// A runtime machine's control port: the App controller's swap orders (lib/machine-control.ts) come
// here, `POST /swap` with the signed order as the body. The order is checked before anything is
// fetched: signed by the platform, for this Pod, current, and not older than the last one taken
// (an order replayed by the app's own code on a sibling machine cannot take it back a revision).
// 200 with the digest served once the machine serves it; 422 with the reason when the artifact
// cannot be fetched or verified (the revision served stays); 403 for an order refused.
import { createServer, type Server } from 'node:http';
import { verifySwapOrder } from '../lib/machine-control.js';
import type { Logger } from '../lib/logger.js';
import { FetchError } from './fetch.js';
import type { SiteRevisions } from './revisions.js';

const maxOrderBytes = 16 * 1024;

export interface ControlOptions {
  /** The controllers' public key (base64url), and the Pod this machine is. */
  publicKey: string;
  pod: string;
  revisions: SiteRevisions;
  log: Logger;
  /** How long a fetch retries transient failures. */
  fetchDeadlineMs?: number;
}

export function createControlServer(opts: ControlOptions): Server {
  let lastIssued: number | undefined;
  return createServer((req, res) => {
    const reply = (status: number, body: object) =>
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body) + '\n');
    if (req.url !== '/swap' || req.method !== 'POST') {
      reply(404, { error: 'the control port takes POST /swap only' });
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
      const checked = verifySwapOrder(opts.publicKey, Buffer.concat(chunks).toString(), {
        pod: opts.pod,
        now: Date.now(),
        ...(lastIssued !== undefined ? { after: lastIssued } : {}),
      });
      if (!checked.ok) {
        opts.log.warn({ error: checked.error }, 'Refused a swap order');
        reply(403, { error: checked.error });
        return;
      }
      const { order } = checked;
      // Taken before it runs: an older order that arrives meanwhile is refused.
      lastIssued = order.issuedAt;
      opts.revisions
        .swap({
          url: order.url,
          digest: order.digest,
          token: order.token,
          ...(opts.fetchDeadlineMs !== undefined ? { deadlineMs: opts.fetchDeadlineMs } : {}),
        })
        .then(
          (done) => reply(200, done),
          (err: unknown) => {
            const message = err instanceof Error ? err.message : String(err);
            opts.log.error({ digest: order.digest, error: message }, `Cannot swap to ${order.digest}: ${message}`);
            reply(err instanceof FetchError ? 422 : 500, { error: message });
          },
        );
    });
  });
}
