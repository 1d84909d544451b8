// The in-pod server of the platform's runtime image. It listens where node-agent's convention (and
// the App controller's pod spec) says: $HOST:$PORT. Serving a static site from SVC_SITE_ROOT is
// what it does so far; HTML apps, Markdown pages and handler trees come with the apps capability.
import { createServer } from 'node:http';
import { loadConfig } from '../lib/config.js';
import { createLogger } from '../lib/logger.js';
import { createStaticSite } from './static-site.js';

const log = createLogger('runtime', loadConfig().logLevel);
const root = process.env.SVC_SITE_ROOT;
const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '0.0.0.0';
if (!root || !Number.isInteger(port) || port < 1 || port > 65535) {
  console.error('runtime: set SVC_SITE_ROOT to the site directory, and PORT to a port (HOST defaults to 0.0.0.0)');
  process.exit(1);
}
const site = createStaticSite(root);
const server = createServer((req, res) => {
  site(req, res).catch((err: unknown) => {
    log.error({ err, url: req.url }, 'Request failed');
    if (!res.headersSent) res.writeHead(500).end();
    else res.destroy();
  });
});
server.listen(port, host, () => log.info({ host, port, root }, 'Serving static site'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
