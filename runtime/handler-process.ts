// A handler tree's revision served from a process of its own (runtime/handler-child.ts), the
// runtime's server passing it each request over a Unix socket: what makes a handler tree's content
// swappable (docs/decisions/0036-deploys-under-a-second.md). A module graph cannot be unloaded from
// a process; a process can be ended. The app's code runs as the runtime's uid and can write what
// the next revision is made from (its tree, its runnable copy), so revisions never overlap: a swap
// stops the one served (its requests finished, within a bound) and ends every process the app's
// code left (runtime/revisions.ts, endAppProcesses) before the next is prepared. The child is the
// app's code: what it says on its IPC channel is read only as "ready" or "failed" before it is
// switched to, nothing after.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import type { Logger } from '../lib/logger.js';
import { hopByHop as responseHopByHop } from './handlers/respond.js';
import type { ServedSite } from './revisions.js';

/**
 * Headers of one hop only (RFC 9110 §7.6.1), not passed on in either direction: those a handler's
 * response never carries (runtime/handlers/respond.ts), and those of a request's own hop.
 */
const hopByHop = new Set([...responseHopByHop, 'te', 'trailer', 'expect']);

/**
 * What the child is not given of the runtime's environment: the artifact's credential, the control
 * port's settings, and the spec's artifact (which a swap has made stale): the app's own, and the
 * runtime's settings for handler trees and identity, it is. (Hygiene more than a wall: the child
 * runs as the runtime's uid and can read its /proc environ; an artifact credential opens only this
 * app's own artifact.)
 */
const withheld = /^SVC_(ARTIFACT|CONTROL|POD)_/;

export interface HandlerProcessOptions {
  log: Logger;
  /** A directory of the runtime's own where each revision's socket and runnable copy go. */
  scratch: string;
  /** How long the process may take to be ready; default 30 s. */
  startMs?: number;
  /** Called when the process ends while it is the one served (not stopped). */
  onLost?: (reason: string) => void;
}

let revisions = 0;

export function createHandlerProcess(dir: string, opts: HandlerProcessOptions): ServedSite {
  // Made (and removed) here, not by the child: a child killed outright cleans nothing up.
  const own = path.join(opts.scratch, `rev-${process.pid}-${++revisions}`);
  const cacheDir = path.join(own, 'copy');
  const socketPath = path.join(own, 'http.sock');
  mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !withheld.test(k)));
  const child: ChildProcess = fork(new URL('./handler-child.js', import.meta.url), [], {
    env: { ...env, SVC_SITE_ROOT: dir, SVC_HANDLER_SOCKET: socketPath, SVC_HANDLER_CACHE: cacheDir },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const agent = new Agent({ keepAlive: true });
  let inFlight = 0;
  let stopping = false;
  let idle: (() => void) | undefined;

  const gone = new Promise<string>((resolve) => {
    const done = (why: string) => {
      agent.destroy();
      rmSync(own, { recursive: true, force: true });
      resolve(why);
    };
    child.once('exit', (code, signal) => done(signal ? `killed by ${signal}` : `exited with code ${String(code)}`));
    child.once('error', (err) => done(`could not start: ${err.message}`));
  });
  let settled = false;
  let served = false;
  const ready = new Promise<void>((resolve, reject) => {
    const fail = (why: string) => {
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(why));
    };
    const startMs = opts.startMs ?? 30_000;
    const timer = setTimeout(() => fail(`the handler process was not ready in ${startMs} ms`), startMs);
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
      else if (served && !stopping) opts.onLost?.(`the handler process of the served revision ${why}`);
    });
  });

  const site = (req: IncomingMessage, res: ServerResponse): Promise<void> =>
    new Promise<void>((resolve) => {
      // Counted from the moment the revision is chosen (the same tick): a swap waits for it.
      inFlight++;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        if (--inFlight === 0) idle?.();
        resolve();
      };
      res.once('close', () => {
        // A client that went away ends the request in the child too (its handler's signal aborts).
        if (!res.writableFinished) upstream.destroy();
        finish();
      });
      const upstream = request({ socketPath, agent, method: req.method, path: req.url, headers: requestHeaders(req) }, (answer) => {
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
    exclusive: true,
    stop: async (drainMs: number) => {
      stopping = true;
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          const bound = setTimeout(resolve, drainMs);
          idle = () => {
            clearTimeout(bound);
            resolve();
          };
        });
      }
      // The whole tree at once, the child with what it started: killed first, its descendants
      // would leave it (and, outside a container, this runtime's reach).
      await endAppProcesses(opts.log);
      await gone;
    },
  });
}

/** The request's headers as the child gets them, its body framed as it came (never left to a default). */
function requestHeaders(req: IncomingMessage): IncomingHttpHeaders {
  const headers = passOn(req.headers);
  // Without this, a chunked body of a GET, DELETE or OPTIONS would go to the child unframed on a
  // kept-alive connection, and read there as the next request: a request smuggled past the
  // identity check, its answer given to whoever asked next. Node has de-chunked it: chunk it again.
  if (req.headers['transfer-encoding'] !== undefined) headers['transfer-encoding'] = 'chunked';
  return headers;
}

function passOn(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !hopByHop.has(k)) out[k] = v;
  return out;
}

/**
 * Ends every process this runtime started and every process they started, however far they went
 * (a CGI handler's background job, a module's detached child, a daemon that left its session): in
 * the machine's container the runtime is process 1, so every orphan becomes its child. SIGKILL,
 * then waits (up to 2 s) until none is left running.
 */
export async function endAppProcesses(log: Logger): Promise<number> {
  const all = descendants(process.pid);
  for (const pid of all) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  for (let i = 0; i < 40 && all.some(running); i++) await new Promise((r) => setTimeout(r, 50));
  const left = all.filter(running);
  if (left.length) log.warn({ pids: left }, 'Processes of the app’s code still run after SIGKILL');
  return all.length;
}

/** Process ids of every descendant of `root`, from /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = parentOf(Number(name));
    if (ppid === undefined) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const queue = [root];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const c of children.get(next) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** The parent of `pid` and whether it still runs (a zombie has ended), from /proc/<pid>/stat. */
function stat(pid: number): { ppid: number; state: string } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold anything: the fields follow its last ')'.
    const [state, ppid] = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(ppid), state: state ?? '' };
  } catch {
    return undefined;
  }
}

const parentOf = (pid: number) => stat(pid)?.ppid;
const running = (pid: number) => {
  const s = stat(pid)?.state;
  return s !== undefined && s !== 'Z' && s !== 'X';
};
