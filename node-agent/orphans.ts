// Container processes a previous node-agent left running (it was killed before it could stop its
// pods). A new agent does not know them, so nothing would ever stop them; they still hold their
// pod's files and addresses. Every container is started with its pod directory on its command line
// (bwrap binds it) or as its working directory, and in a process group of its own, so the groups to
// end are found in /proc.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

function processGroupOf(pid: number): number | undefined {
  try {
    // Field 5 of /proc/<pid>/stat; the command name (field 2) may hold spaces, so count from ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[2]);
  } catch {
    return undefined;
  }
}

/** The process groups of processes that belong to a pod under `podsDir`. */
export function orphanGroups(podsDir: string, self = process.pid): number[] {
  const prefix = path.resolve(podsDir) + path.sep;
  const groups = new Set<number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === self) continue;
    let mine = false;
    try {
      mine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((arg) => arg.startsWith(prefix));
      if (!mine) mine = (readlinkSync(`/proc/${pid}/cwd`) + path.sep).startsWith(prefix);
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    const group = mine ? processGroupOf(pid) : undefined;
    // Never our own group (a container's group is its own; the agent's is not one of them).
    if (group && group > 1 && group !== processGroupOf(self)) groups.add(group);
  }
  return [...groups];
}

/** Ends (SIGKILL) every process group found; returns how many. */
export function reapOrphans(podsDir: string): number {
  const groups = orphanGroups(podsDir);
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // ended meanwhile
    }
  }
  return groups.length;
}
