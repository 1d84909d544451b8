// A server process a test file starts (Pebble, named): the end of its output kept for the failure
// message, how it ended, and a stop that asks first (SIGTERM) and insists after 5 s. Neither the
// process nor its pipes keep the test's process alive, and it is killed when that process exits.
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Socket } from 'node:net';

/** Most of a server's output kept (the end of it): enough for a failed start or a failed request. */
const OUTPUT_LIMIT = 256 * 1024;

export interface Supervised {
  /** The end of what it wrote on stdout and stderr. */
  output(): string;
  /** How it ended (`exited with code 1`, `killed by SIGKILL`, `could not start: ...`); undefined while it runs. */
  exited(): string | undefined;
  /** SIGTERM, SIGKILL 5 s later if it is still there; resolves once it is gone. */
  stop(): Promise<void>;
  /** SIGKILL now, without waiting (a start that failed). */
  kill(): void;
}

export function supervise(child: ChildProcessByStdio<null, Readable, Readable>): Supervised {
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString('utf8')).slice(-OUTPUT_LIMIT);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = signal ? `killed by ${signal}` : `exited with code ${String(code)}`;
      resolve();
    });
    child.once('error', (err) => {
      exited ??= `could not start: ${err.message}`;
      resolve();
    });
  });
  const killNow = () => child.kill('SIGKILL');
  process.once('exit', killNow);
  child.unref();
  for (const pipe of [child.stdout, child.stderr]) (pipe as unknown as Socket).unref();
  return {
    output: () => output,
    exited: () => exited,
    kill: () => {
      process.removeListener('exit', killNow);
      killNow();
    },
    stop: async () => {
      process.removeListener('exit', killNow);
      if (exited !== undefined) return;
      child.kill('SIGTERM');
      const later = setTimeout(killNow, 5000);
      await exit;
      clearTimeout(later);
    },
  };
}
