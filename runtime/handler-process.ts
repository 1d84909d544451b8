// A handler tree's revision served from a process of its own (runtime/handler-child.ts), the
// runtime's server passing it each request over a Unix socket: what makes a handler tree's content
// swappable (docs/decisions/0036-deploys-under-a-second.md). A module graph cannot be unloaded from
// a process; a process can be ended. The revision a swap leaves is retired: it finishes the
// requests it has (bounded), then its process is ended. The child is the app's code: what it says
// on its IPC channel is read only as "ready" or "failed" before it is switched to, nothing after.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '../lib/logger.js';
import type { ServedSite } from './revisions.js';

/** Headers of one hop only (RFC 9110 §7.6.1), not passed on in either direction. */
const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer', 'expect']);

/**
 * What the child is not given of the runtime's environment: the artifact's credential, the control
 * port's settings, and the spec's artifact (which a swap has made stale): the app's own, and the
 * runtime's settings for handler trees and identity, it is.
 */
const withheld = /^SVC_(ARTIFACT|CONTROL|POD)_/;

export interface HandlerProcessOptions {
  log: Logger;
  /** How long a retired revision may finish its requests before its process is ended; default 30 s. */
  retireMs?: number;
  /** How long the process may take to be ready; default 30 s. */
  startMs?: number;
  /** Called when the process ends while it is the one served (not retired). */
  onLost?: (reason: string) => void;
}

export function createHandlerProcess(dir: string, opts: HandlerProcessOptions): ServedSite {
  const socketDir = mkdtempSync(path.join(tmpdir(), 'svc-rev-'));
  const socketPath = path.join(socketDir, 'http.sock');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !withheld.test(k)));
  const child: ChildProcess = fork(new URL('./handler-child.js', import.meta.url), [], {
    env: { ...env, SVC_SITE_ROOT: dir, SVC_HANDLER_SOCKET: socketPath },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const agent = new Agent({ keepAlive: true });
  let inFlight = 0;
  let retired = false;
  let ended: string | undefined;

  const gone = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      ended = signal ? `killed by ${signal}` : `exited with code ${String(code)}`;
      agent.destroy();
      rmSync(socketDir, { recursive: true, force: true });
      resolve(ended);
    });
    child.once('error', (err) => resolve((ended ??= `could not start: ${err.message}`)));
  });
  let settled = false;
  let served = false;
  const ready = new Promise<void>((resolve, reject) => {
    const fail = (why: string) => {
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(why));
    };
    const timer = setTimeout(() => fail(`the handler process was not ready in ${opts.startMs ?? 30_000} ms`), opts.startMs ?? 30_000);
    const onMessage = (m: unknown) => {
      if (settled || typeof m !== 'object' || m === null) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      if ('ready' in m && m.ready === true) {
        settled = served = true;
        resolve();
      } else fail('failed' in m && typeof m.failed === 'string' ? m.failed.slice(0, 1024) : 'the handler process could not start');
    };
    child.on('message', onMessage);
    void gone.then((why) => {
      clearTimeout(timer);
      if (!settled) fail(`the handler process ${why} before it was ready`);
      else if (served && !retired) opts.onLost?.(`the handler process of the served revision ${why}`);
    });
  });

  const end = () => {
    if (ended === undefined) child.kill('SIGTERM');
    const hard = setTimeout(() => child.kill('SIGKILL'), 5000);
    hard.unref();
  };

  const site = (req: IncomingMessage, res: ServerResponse): Promise<void> =>
    new Promise<void>((resolve) => {
      inFlight++;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        inFlight--;
        if (retired && inFlight === 0) end();
        resolve();
      };
      res.once('close', () => {
        // A client that went away ends the request in the child too (its handler's signal aborts).
        if (!res.writableFinished) upstream.destroy();
        finish();
      });
      const upstream = request({ socketPath, agent, method: req.method, path: req.url, headers: passOn(req.headers) }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, passOn(answer.headers));
        answer.pipe(res);
        answer.once('error', () => res.destroy());
      });
      upstream.once('error', (err) => {
        if (res.headersSent) res.destroy();
        else {
          opts.log.error({ err, url: req.url }, 'The handler process did not answer');
          res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end('bad gateway\n');
        }
      });
      req.pipe(upstream);
    });

  return Object.assign(site, {
    ready,
    retire: () => {
      if (retired) return;
      retired = true;
      if (inFlight === 0) end();
      else setTimeout(end, opts.retireMs ?? 30_000).unref();
    },
  });
}

function passOn(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !hopByHop.has(k)) out[k] = v;
  return out;
}
