// What an exec leaves running is ended with it. An exec's process group is killed at its end
// (exec.ts), but a process can leave its group and session (`setsid`, a daemon's double fork) and
// is then reparented to the pod's PID 1: the attack of issue 30 had `(setsid sh -c "sleep 900" &)`
// outlive its exec by fifteen minutes. The sandbox pod has a PID namespace of its own (the pause
// container, the agent, and what the agent started), so "every process of the sandbox's user but
// the agent, PID 1 and what the agent runs for itself" is exactly what tenant code started. Those
// are ended when no exec runs any more: with execs side by side, what one left behind ends when
// the last of them ends (another's may still be using it).
import { readdir, readFile, stat } from 'node:fs/promises';

export interface ProcessEntry {
  pid: number;
  /** The real uid. */
  uid: number;
}

/** The processes to end: the user's, but for PID 1, the agent and those it spares. Pure. */
export function strays(processes: readonly ProcessEntry[], self: { pid: number; uid: number }, spared: ReadonlySet<number>): number[] {
  return processes.filter((p) => p.uid === self.uid && p.pid !== 1 && p.pid !== self.pid && !spared.has(p.pid)).map((p) => p.pid);
}

/** The processes of this PID namespace, as /proc shows them (zombies, which only PID 1 can reap, left out). */
export async function processes(proc = '/proc'): Promise<ProcessEntry[]> {
  const out: ProcessEntry[] = [];
  for (const entry of await readdir(proc).catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(`${proc}/${entry}/status`, 'utf8').catch(() => undefined);
    if (!status) continue;
    const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (uid === undefined || state === 'Z') continue;
    out.push({ pid: Number(entry), uid: Number(uid) });
  }
  return out;
}

/**
 * Ends every stray until none is left (a fork bomb adds to them while the first kills land): at
 * most `rounds` passes. Answers how many were killed.
 */
export async function killStrays(self: { pid: number; uid: number }, spared: ReadonlySet<number>, rounds = 50): Promise<number> {
  let killed = 0;
  for (let i = 0; i < rounds; i++) {
    const found = strays(await processes(), self, spared);
    if (!found.length) return killed;
    for (const pid of found) {
      try {
        process.kill(pid, 'SIGKILL');
        killed += 1;
      } catch {
        // gone already
      }
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return killed;
}

/**
 * Whether this process can end strays safely: it is not root, and PID 1 is not an init of a host
 * (in a sandbox pod it is the pause container's process). Elsewhere (tests, a developer's shell)
 * the same code would end the user's other processes.
 */
export async function inSandboxPod(): Promise<boolean> {
  if (process.getuid?.() === 0 || process.pid === 1) return false;
  const comm = (await readFile('/proc/1/comm', 'utf8').catch(() => '')).trim();
  return comm === 'pause';
}

/**
 * Whether this process is dumpable: then its memory and environment (/proc/self/mem, environ)
 * are open to any process of its uid, and ptrace too. A non-dumpable process's /proc files are
 * root's; the sandbox image runs the agent so (hack/images.sh, an execute-only node).
 */
export async function dumpable(): Promise<boolean> {
  const s = await stat('/proc/self/environ');
  return s.uid === process.getuid?.();
}
