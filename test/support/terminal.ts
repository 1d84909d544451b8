// A real terminal for CLI tests: a tmux session (its own server socket) running one command, read
// as a person sees the screen and typed into key by key. For the parts of `svc` that behave
// differently at a terminal: questions asked before a change, a browser opened by svc login.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { uniqueName } from './kube.js';
import { eventually } from './wait.js';

const run = promisify(execFile);

export interface Terminal {
  /** What the screen shows now (the pane's text, trailing blank lines dropped). */
  screen(): Promise<string>;
  /** Waits until the screen matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Types text and, unless `enter` is false, Enter. */
  type(text: string, enter?: boolean): Promise<void>;
  /** The command's exit status, once it has ended (the pane stays to be read). */
  exitCode(timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

/** Starts `command` (a shell line) in a new 200×50 terminal with `env` set. */
export async function startTerminal(command: string, env: Record<string, string>): Promise<Terminal> {
  const socket = uniqueName('svc-tmux');
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, ...args], { env: { ...process.env, ...env } });
  const exports = Object.entries(env)
    .map(([k, v]) => `${k}='${v.replace(/'/g, `'\\''`)}'`)
    .join(' ');
  // The exit status is printed last, where the test reads it; the pane then waits to be read.
  await tmux('new-session', '-d', '-x', '200', '-y', '50', '-s', 'svc', `env ${exports} ${command}; echo "[exit $?]"; sleep 600`);
  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'svc', '-J')).stdout.replace(/\s+$/, '');
  // A wait that times out says what the screen showed then: the failure's reason is usually on it.
  const shown = <T>(waiting: Promise<T>): Promise<T> =>
    waiting.catch(async (err: unknown) => {
      const text = await screen().catch((e: unknown) => `(the screen could not be read: ${String(e)})`);
      throw new Error(`${err instanceof Error ? err.message : String(err)}; the screen shows:\n${text}`, { cause: err });
    });
  return {
    screen,
    waitFor: (pattern, timeoutMs = 20_000) =>
      shown(
        eventually(
          `the terminal to show ${String(pattern)}`,
          async () => {
            const text = await screen();
            return pattern.test(text) ? text : undefined;
          },
          { timeoutMs, intervalMs: 100 },
        ),
      ),
    async type(text, enter = true) {
      await tmux('send-keys', '-t', 'svc', '-l', text);
      if (enter) await tmux('send-keys', '-t', 'svc', 'Enter');
    },
    async exitCode(timeoutMs = 20_000) {
      const text = await shown(
        eventually(
          'the command to end',
          async () => {
            const t = await screen();
            return /\[exit \d+\]/.test(t) ? t : undefined;
          },
          { timeoutMs, intervalMs: 100 },
        ),
      );
      return Number(/\[exit (\d+)\]/.exec(text)![1]);
    },
    close: async () => {
      await tmux('kill-server').catch(() => undefined);
    },
  };
}
