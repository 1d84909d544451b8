// The in-pod server of the platform's runtime image (svc/runtime, hack/images.sh). It listens where
// the App controller's pod spec says: $HOST:$PORT, and serves the site tree in SVC_SITE_ROOT as the
// app's kind asks. With SVC_ARTIFACT_DIGEST it first fetches that artifact under the site root and
// verifies it (runtime/fetch.ts: SVC_ARTIFACT_URL, SVC_ARTIFACT_TOKEN, SVC_FETCH_DEADLINE_MS;
// runtime/revisions.ts), and listens only once the site is in place: listening is being ready
// (controllers/app/machine-spec.ts). With SVC_CONTROL_PORT, SVC_CONTROL_KEY and SVC_POD_NAME it
// also takes the controller's swap orders (runtime/control.ts): another artifact served in place.
//
// Env: SVC_SITE_ROOT (required), SVC_APP_KIND (static | html | markdown | handlers; default static),
// PORT (8080), HOST (0.0.0.0), SVC_DRAIN_MS (2000), SVC_LOG_LEVEL, and for handler trees
// SVC_HANDLER_TIMEOUT_MS (30000), SVC_HANDLER_MAX_PROCESSES (16), SVC_HANDLER_MAX_WAITING (64)
// (runtime/handlers.ts), and for the visitor's identity SVC_AUTH_JWKS_URL, SVC_AUTH_ISSUER and
// SVC_AUTH_AUDIENCE (runtime/identity.ts: without them every visitor is anonymous).
//
// With the argument `fetch` it only fetches (a build's source, runtime/fetch.ts): the image's entry
// point stays the same, so a pod spec says `args: [fetch]` rather than a path inside the image.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BadRequestTarget, canonicalTarget } from '../lib/http/request-target.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { createControlServer } from './control.js';
import { createHandlerTree } from './handlers.js';
import { createHtmlApp } from './html-app.js';
import { identityCheckFromEnv } from './identity.js';
import { createMarkdownSite } from './markdown.js';
import { SiteRevisions } from './revisions.js';
import { createStaticSite, type SiteHandler } from './static-site.js';

if (process.argv[2] === 'fetch') {
  await (await import('./fetch.js')).main();
} else {
  await serve();
}

async function serve(): Promise<void> {
  const levels = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
  const level = process.env.SVC_LOG_LEVEL ?? 'info';
  const log = createLogger('runtime', levels.has(level) ? (level as 'info') : 'info');
  const kinds: Record<string, (root: string) => SiteHandler> = {
    static: (root) => createStaticSite(root),
    html: createHtmlApp,
    markdown: createMarkdownSite,
    handlers: (root) => {
      // Handler code shares this process: a promise it forgets to handle is logged, not fatal to
      // every other request in flight.
      process.on('unhandledRejection', (err) => log.error({ err }, 'Unhandled rejection in handler code'));
      // The runnable copy of the tree goes with the process.
      const cacheDir = mkdtempSync(path.join(tmpdir(), 'svc-handlers-'));
      process.once('exit', () => rmSync(cacheDir, { recursive: true, force: true }));
      return createHandlerTree(root, { log, cacheDir });
    },
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
  const revisions = process.env.SVC_ARTIFACT_DIGEST ? await startRevisions(root, make, log) : undefined;
  const plain = revisions ? undefined : make(root);
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
    // The revision served when the request arrived serves all of it, whatever a swap does meanwhile.
    const site = revisions?.site ?? plain!;
    identity
      .apply(req)
      .then(() => site(req, res))
      .catch((err: unknown) => {
        log.error({ err, url: req.url }, 'Request failed');
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
  });
  // Orders are taken before the machine is ready (listening on its port): a ready machine takes them.
  const control = revisions ? await controlFromEnv(revisions, root, host, port, log) : undefined;
  server.listen(port, host, () => log.info({ host, port, root, kind, digest: revisions?.digest }, 'Serving site'));

  function shutdown(signal: string, delay: number): void {
    if (draining) return;
    draining = true;
    // Endpoint controllers and proxies take a moment to stop routing to a terminating pod; requests
    // that still arrive in that window are served rather than refused.
    log.info({ signal, drainMs: delay }, 'Draining before shutdown');
    setTimeout(() => {
      log.info({ inFlight }, 'Closing: no new connections, finishing requests in flight');
      control?.close();
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
async function startRevisions(root: string, make: (dir: string) => SiteHandler, log: Logger): Promise<SiteRevisions> {
  const { optionsFromEnv } = await import('./fetch.js');
  // The revision served before a restart is taken back only on a machine that takes orders: one
  // that runs the app's code (a handler tree) could have planted a pointer and an archive to match.
  const revisions = new SiteRevisions(root, make, log, { resume: takesOrders() });
  try {
    const { url, digest, token, deadlineMs } = optionsFromEnv(process.env);
    await revisions.start({ url, digest, ...(token ? { token } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}) });
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

/** Whether the pod spec has this machine take swap orders (content kinds only: machine-spec.ts). */
function takesOrders(): boolean {
  return Boolean(process.env.SVC_CONTROL_PORT && process.env.SVC_CONTROL_KEY) && process.env.SVC_APP_KIND !== 'handlers';
}

/** The control port, when the pod spec gives one (content-swappable machines): runtime/control.ts. */
async function controlFromEnv(
  revisions: SiteRevisions,
  root: string,
  host: string,
  appPort: number,
  log: Logger,
): Promise<Server | undefined> {
  const port = Number(process.env.SVC_CONTROL_PORT);
  const publicKey = process.env.SVC_CONTROL_KEY;
  const pod = process.env.SVC_POD_NAME;
  const uid = process.env.SVC_POD_UID;
  if (!takesOrders() || !publicKey || !pod || !uid || !Number.isInteger(port) || port < 1 || port > 65535 || port === appPort)
    return undefined;
  const control = createControlServer({ publicKey, pod, uid, revisions, log, lastOrderFile: path.join(root, '.svc-last-order') });
  await new Promise<void>((resolve) => control.listen(port, host, resolve));
  log.info({ port }, 'Taking swap orders');
  return control;
}
