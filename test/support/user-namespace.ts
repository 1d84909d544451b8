// What a tenant pod's /proc/self/uid_map must say when it runs in a user namespace of its own
// (hostUsers: false, docs/decisions/0022-runtime.md): one range of 65536 IDs, starting at its uid 0,
// mapped to host IDs above every ordinary host user. A pod on the host's users reads the identity
// map `0 0 4294967295`, in which its uid 1000 is the host's uid 1000.
import assert from 'node:assert/strict';

export function assertOwnUserNamespace(uidMap: string): void {
  const lines = uidMap.trim().split('\n');
  assert.equal(lines.length, 1, `one range (uid_map: ${uidMap})`);
  const [inside, outside, count] = lines[0]!.trim().split(/\s+/).map(Number) as [number, number, number];
  assert.equal(inside, 0, `the range starts at the pod's uid 0 (uid_map: ${uidMap})`);
  assert.equal(count, 65536, `65536 IDs, not the host's whole range (uid_map: ${uidMap})`);
  assert.ok(outside >= 65536, `mapped above the host's own users (uid_map: ${uidMap})`);
}
