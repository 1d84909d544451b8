// The runtime serving a site (runtime/main.ts): fetched, verified and loaded before it listens on
// $HOST:$PORT, and then ready (runtime/machine-port.ts). Its environment is main.ts's.
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BadRequestTarget, canonicalTarget } from '../lib/http/request-target.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { controlRequests, servedOrderDigest } from './control.js';
import { createHandlerProcess } from './handler-process.js';
import { createHtmlApp } from './html-app.js';
import { identityCheckFromEnv } from './identity.js';
import type { MachinePort } from './machine-port.js';
import { createMarkdownSite } from './markdown.js';
import { SiteRevisions, type ServedSite } from './revisions.js';
import { createStaticSite } from './static-site.js';

export async function serve(machine: MachinePort | undefined): Promise<void> {
  const levels = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
  const level = process.env.SVC_LOG_LEVEL ?? 'info';
  const log = createLogger('runtime', levels.has(level) ? (level as 'info') : 'info');
  const lost = (reason: string) => {
    log.error({ reason }, `Stopping: ${reason}`);
    log.flush(() => process.exit(1));
  };
  let scratch: string | undefined;
  const kinds: Record<string, (root: string) => ServedSite> = {
    static: (root) => createStaticSite(root),
    html: createHtmlApp,
    markdown: createMarkdownSite,
    // The app's code runs in a process of each revision's own (runtime/handler-child.ts), never in
    // this one, which holds the control port. The served revision's process ending ends this one
    // too: the container restarts, as it did when handler code brought the runtime down.
    handlers: (root) => createHandlerProcess(root, { log, scratch: (scratch ??= scratchDir(process.env.SVC_SITE_ROOT!)), onLost: lost }),
  };

  const root = process.env.SVC_SITE_ROOT;
  const kind = process.env.SVC_APP_KIND || 'static';
  const port = Number(process.env.PORT ?? 8080);
  const host = process.env.HOST ?? '0.0.0.0';
  const drainMs = Number(process.env.SVC_DRAIN_MS ?? 2000);
  const make = kinds[kind];
  if (!root || !make || !Number.isInteger(port) || port < 1 || port > 65535 || !Number.isFinite(drainMs) || drainMs < 0) {
    console.error(
      'runtime: set SVC_SITE_ROOT to the site directory, SVC_APP_KIND to static, html, markdown or handlers, PORT to a port ' +
        '(HOST defaults to 0.0.0.0) and SVC_DRAIN_MS to milliseconds',
    );
    process.exit(1);
  }

  // A fetched artifact is served from the revisions under the root; a plain root as it is.
  const orders = machine && controlFromEnv();
  const revisions = process.env.SVC_ARTIFACT_DIGEST ? await startRevisions(root, make, orders, log, lost) : undefined;
  const plain = revisions ? undefined : make(root);
  await plain?.ready;
  const identity = identityCheckFromEnv(process.env, log);
  let draining = false;
  let inFlight = 0;
  const server = createServer((req, res) => {
    inFlight++;
    res.once('close', () => inFlight--);
    // While draining, ask keep-alive clients to reconnect, so their next request lands on a pod that stays.
    if (draining) res.setHeader('Connection', 'close');
    // The target is read only as a path, in the one canonical form ingress-auth decided on and
    // forwarded (lib/http/request-target.ts): never as a host (`//x/...`) or an absolute URL.
    try {
      req.url = canonicalTarget(req.url ?? '/').target;
    } catch (err) {
      if (!(err instanceof BadRequestTarget)) throw err;
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end(`${err.message}\n`);
      return;
    }
    // Identity headers reach the site only as a verified assertion proves them (runtime/identity.ts).
    // The revision served once that is done serves all of the request, whatever a swap does
    // meanwhile: it is chosen and handed the request in one tick (a swap waits for what it has).
    identity
      .apply(req)
      .then(() => (revisions?.site ?? plain!)(req, res))
      .catch((err: unknown) => {
        log.error({ err, url: req.url }, 'Request failed');
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
  });
  // Orders are taken before the machine is ready: a ready machine takes them.
  if (revisions && orders && machine) {
    machine.takeOrders(controlRequests({ ...orders, revisions, log, root }));
    log.info({ port: machine.port }, 'Taking swap orders');
  }
  server.listen(port, host, () => {
    machine?.serving();
    log.info({ host, port, root, kind, digest: revisions?.digest }, 'Serving site');
  });

  function shutdown(signal: string, delay: number): void {
    if (draining) return;
    draining = true;
    // Endpoint controllers and proxies take a moment to stop routing to a terminating pod; requests
    // that still arrive in that window are served rather than refused.
    log.info({ signal, drainMs: delay }, 'Draining before shutdown');
    setTimeout(() => {
      log.info({ inFlight }, 'Closing: no new connections, finishing requests in flight');
      machine?.close();
      server.close(() => {
        log.info('Stopped');
        process.exit(0);
      });
      server.closeIdleConnections();
      // A kept-alive connection that becomes idle after its last response would otherwise hold close().
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      sweep.unref();
    }, delay);
  }
  process.on('SIGTERM', () => shutdown('SIGTERM', drainMs));
  process.on('SIGINT', () => shutdown('SIGINT', 0));
}

/**
 * The artifact the pod spec names (or, after a restart, the one served before it), fetched and
 * verified under the root before anything is served. The credential leaves the environment once
 * used: handler code runs in processes this one starts. A failure ends the process (exit 1), its
 * message the container's last words (terminationMessagePolicy FallbackToLogsOnError).
 */
async function startRevisions(
  root: string,
  make: (dir: string) => ServedSite,
  control: Control | undefined,
  log: Logger,
  onLost: (reason: string) => void,
): Promise<SiteRevisions> {
  const { optionsFromEnv } = await import('./fetch.js');
  const revisions = new SiteRevisions(root, make, log, { onLost });
  try {
    const { url, digest, token, deadlineMs } = optionsFromEnv(process.env);
    // What the last order this machine served names, if it is one the platform signed for this Pod.
    const resume = control && servedOrderDigest(root, control);
    await revisions.start({ url, digest, ...(token ? { token } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}) }, resume);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.error({ error: message }, `Cannot fetch the artifact: ${message}`);
    await new Promise<void>((resolve) => log.flush(() => resolve()));
    process.exit(1);
  } finally {
    delete process.env.SVC_ARTIFACT_TOKEN;
  }
  return revisions;
}

/**
 * The runtime's own scratch directory for the site at `root` (each handler revision's socket and
 * runnable copy), made empty at start: what a container killed outright left in its /tmp
 * emptyDir (which outlives a restart) goes then.
 */
function scratchDir(root: string): string {
  const dir = path.join(tmpdir(), `svc-runtime-${createHash('sha256').update(path.resolve(root)).digest('hex').slice(0, 12)}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

interface Control {
  publicKey: string;
  pod: string;
  uid: string;
}

/**
 * What has this machine take swap orders on its machine port, when the pod spec gives it
 * (controllers/app/machine-spec.ts controlEnv; the port itself is main.ts's to open).
 */
function controlFromEnv(): Control | undefined {
  const publicKey = process.env.SVC_CONTROL_KEY;
  const pod = process.env.SVC_POD_NAME;
  const uid = process.env.SVC_POD_UID;
  if (!publicKey || !pod || !uid) return undefined;
  return { publicKey, pod, uid };
}
