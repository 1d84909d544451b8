// A runtime machine's own port beside the app's (lib/machine-control.ts controlPortFor): the
// platform's, never routed to visitors. It is the first thing the runtime opens, before it loads
// anything else, so the kubelet's readiness probe finds it at once: `GET /ready` is held until the
// app's site is fetched, verified and served, then answered 200. A probe the kubelet runs the moment
// it sees the container running is so answered as the site comes up, rather than failing and waiting
// a whole probe period (1 s, the least Kubernetes allows) for its next try
// (docs/decisions/0036-deploys-under-a-second.md). `GET /live` is answered at once whenever the
// runtime's event loop turns (the liveness probe: a start, however long its fetch, is not cut
// short). The controller's swap orders come here too (runtime/control.ts), from when the machine
// serves.
//
// Node's built-ins only: this module is loaded before the rest of the runtime.
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';

export interface MachinePort {
  readonly port: number;
  /** The site is served: `/ready` answers 200 from now on, and held probes are answered. */
  serving(): void;
  /** Where the other requests go from now on (the swap orders). */
  takeOrders(listener: RequestListener): void;
  close(): void;
}

function reply(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body) + '\n');
}

/** Probes held at once, at most: more are answered 503 straight away (each holds a timer). */
const maxHeld = 64;

/**
 * Listens on `port` at `host`. A `/ready` asked before the site is served is held for `holdMs` at
 * most, then answered 503: the kubelet tries again a period later.
 */
export async function listenMachinePort(port: number, host: string, holdMs: number): Promise<MachinePort> {
  let ready = false;
  let orders: RequestListener | undefined;
  const held = new Set<() => void>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const probe = req.method === 'GET' || req.method === 'HEAD';
    if (req.url === '/live' && probe) return reply(res, 200, { live: true });
    if (req.url === '/ready' && probe) {
      if (ready) return reply(res, 200, { ready: true });
      if (held.size >= maxHeld) return reply(res, 503, { error: 'the site is not served yet' });
      const answer = () => {
        clearTimeout(timer);
        held.delete(answer);
        if (ready) reply(res, 200, { ready: true });
        else reply(res, 503, { error: 'the site is not served yet' });
      };
      const timer = setTimeout(answer, holdMs);
      held.add(answer);
      // A probe that gave up is not answered later.
      res.once('close', () => {
        clearTimeout(timer);
        held.delete(answer);
      });
      return;
    }
    if (orders) return orders(req, res);
    if (ready) return reply(res, 404, { error: 'the machine port takes GET /ready and GET /live: this machine takes no orders' });
    reply(res, 503, { error: 'the machine is not serving yet: it takes orders once it does' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port,
    serving() {
      ready = true;
      for (const answer of [...held]) answer();
    },
    takeOrders(listener) {
      orders = listener;
    },
    close() {
      server.close();
      server.closeIdleConnections();
    },
  };
}
