// One revision of a handler tree, in a process of its own (runtime/handler-process.ts starts it):
// the app's modules load into this process's module graph and no other, so a content swap to
// another revision starts a fresh one, and the revision left behind goes with its process (its
// timers, sockets and module state included). It serves the tree in SVC_SITE_ROOT on the Unix
// socket SVC_HANDLER_SOCKET, to the runtime's server only (which has canonicalised the target and
// verified the identity headers), and says `ready` on its IPC channel once it listens. Its runnable
// copy goes into SVC_HANDLER_CACHE, which the runtime made and removes. It ends when its channel
// does: a runtime that died leaves no revision serving behind it.
import { createServer } from 'node:http';
import path from 'node:path';
import { createLogger } from '../lib/logger.js';
import { createHandlerTree } from './handlers.js';

const root = process.env.SVC_SITE_ROOT;
const socket = process.env.SVC_HANDLER_SOCKET;
const cacheDir = process.env.SVC_HANDLER_CACHE;
if (!root || !socket || !cacheDir || !process.send) {
  console.error('handler-child: started by the runtime only (SVC_SITE_ROOT, SVC_HANDLER_SOCKET, SVC_HANDLER_CACHE and an IPC channel)');
  process.exit(2);
}
const levels = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
const level = process.env.SVC_LOG_LEVEL ?? 'info';
const log = createLogger('runtime', levels.has(level) ? (level as 'info') : 'info').child({ revision: path.basename(root) });

// Handler code runs here: a promise it forgets to handle is logged, not fatal to every other
// request in flight.
process.on('unhandledRejection', (err) => log.error({ err }, 'Unhandled rejection in handler code'));
process.once('disconnect', () => process.exit(0));
process.once('SIGTERM', () => process.exit(0));
// Ctrl-C in a terminal reaches the whole process group: the runtime decides when this one ends
// (it drains first), by ending the channel.
process.on('SIGINT', () => {});

const tree = createHandlerTree(root, { log, cacheDir });
const server = createServer((req, res) => {
  tree(req, res).catch((err: unknown) => {
    log.error({ err, url: req.url }, 'Request failed');
    if (!res.headersSent) res.writeHead(500).end();
    else res.destroy();
  });
});
tree.ready.then(
  () => server.listen(socket, () => process.send!({ ready: true })),
  (err: unknown) => {
    // A tree that cannot be made runnable is not a revision to switch to: the swap is refused with why.
    // (createHandlerTree has logged it.)
    const message = err instanceof Error ? err.message : String(err);
    process.send!({ failed: message }, () => process.exit(1));
  },
);
