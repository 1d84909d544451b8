// ingress-auth as N worker processes sharing its port (SO_REUSEPORT: the kernel spreads new
// connections over them, as nginx's worker_processes do), each a whole ingress-auth of its own:
// its route caches, its PostgreSQL pool and LISTEN for revoked sessions, its session cache. Nothing
// a request needs is shared between workers in memory, so a sign-in on one is honoured by all (the
// session is in PostgreSQL) and a revocation reaches all (each LISTENs). This primary process only
// starts them, starts again one that died, and passes a stop signal on.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '../lib/logger.js';

/** A worker that dies within this of its start counts as crashing: the next start waits. */
const crashWindowMs = 5_000;
const maxRestartDelayMs = 10_000;

export async function superviseWorkers(count: number, log: Logger): Promise<never> {
  let stopping = false;
  let delay = 0;
  const started = new Map<Worker, number>();
  const fork = () => {
    const w = cluster.fork();
    started.set(w, Date.now());
  };
  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (started.get(worker) ?? 0);
    started.delete(worker);
    if (stopping) {
      if (started.size === 0) process.exit(0);
      return;
    }
    delay = lived < crashWindowMs ? Math.min(Math.max(delay * 2, 250), maxRestartDelayMs) : 0;
    log.error(
      { worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delay },
      'An ingress-auth worker exited; starting another',
    );
    setTimeout(fork, delay).unref();
  });
  for (let i = 0; i < count; i++) fork();
  log.info({ workers: count }, 'ingress-auth workers starting');
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'Stopping ingress-auth workers');
    // Each worker finishes its in-flight requests (server.ts close), then exits.
    for (const w of started.keys()) w.process.kill('SIGTERM');
    if (started.size === 0) process.exit(0);
    setTimeout(() => process.exit(0), 12_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  return new Promise<never>(() => undefined);
}

/** This process's worker number (1, 2, ...; a replacement gets a new one), or undefined when not a worker. */
export function workerId(): number | undefined {
  return cluster.isWorker ? cluster.worker?.id : undefined;
}
