// The platform's daemons as hack/*.sh started them (pid files under .svc/run): for tests that stop
// a shared part on purpose, which is safe only in a file that runs alone (its first line says
// `// test-runs-alone: <why>`, and hack/test.sh runs it after the others, one at a time); each
// test puts back what it stopped.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../lib/paths.js';
import { eventually } from './wait.js';

const run = promisify(execFile);
const stateDir = process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc');

export const pidOf = (name: string) => Number(readFileSync(path.join(stateDir, 'run', `${name}.pid`), 'utf8').trim());

export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** SIGKILLs a platform daemon started by hack/*.sh and waits until it is gone. */
export async function kill9(name: string): Promise<void> {
  const pid = pidOf(name);
  process.kill(pid, 'SIGKILL');
  await eventually(`${name} (pid ${pid}) to be gone`, () => !alive(pid), { timeoutMs: 10_000, intervalMs: 50 });
}

/**
 * Starts it again the way `make test` did (the script waits until it is ready, reading its log:
 * so not with the tests' own SVC_LOG_LEVEL=silent).
 */
export async function restart(script: string, ...args: string[]): Promise<void> {
  await run(path.join(repoRoot, 'hack', script), args, { cwd: repoRoot, timeout: 180_000, env: { ...process.env, SVC_LOG_LEVEL: 'info' } });
}
