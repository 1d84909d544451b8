// What a tenant pod's /proc/self/uid_map must say when it runs in a user namespace of its own
// (hostUsers: false, docs/decisions/0022-runtime.md): one range of 65536 IDs, starting at its uid 0,
// mapped to host IDs above every ordinary host user. A pod on the host's users reads the identity
// map `0 0 4294967295`, in which its uid 1000 is the host's uid 1000.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { processIds } from './processes.js';

export function assertOwnUserNamespace(uidMap: string): void {
  const lines = uidMap.trim().split('\n');
  assert.equal(lines.length, 1, `one range (uid_map: ${uidMap})`);
  const [inside, outside, count] = lines[0]!.trim().split(/\s+/).map(Number) as [number, number, number];
  assert.equal(inside, 0, `the range starts at the pod's uid 0 (uid_map: ${uidMap})`);
  assert.equal(count, 65536, `65536 IDs, not the host's whole range (uid_map: ${uidMap})`);
  assert.ok(outside >= 65536, `mapped above the host's own users (uid_map: ${uidMap})`);
}

/**
 * The host uids of the processes of the pod with this UID, read on the node (the tests run on the
 * nodes' host): a process belongs to the pod when its cgroup path names it (the kubelet's cgroupfs
 * driver names it `pod<uid>`; systemd's, `pod<uid with underscores>`).
 */
export async function hostUidsOfPod(podUid: string): Promise<number[]> {
  const names = [`pod${podUid}`, `pod${podUid.replaceAll('-', '_')}`];
  const uids: number[] = [];
  for (const pid of await processIds()) {
    const cgroup = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    if (!names.some((n) => cgroup.includes(`/${n}/`))) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (uid !== undefined) uids.push(Number(uid));
  }
  return uids;
}
