// A container process a killed node-agent left behind is found by its pod directory and ended.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { orphanGroups, reapOrphans } from '../../node-agent/orphans.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('node-agent orphan reaping', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-orphans-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('ends process groups started in a pod directory or naming one, and nothing else', async () => {
    const pods = path.join(root, 'pods');
    const podDir = path.join(pods, 'ns_web_uid');
    mkdirSync(podDir, { recursive: true });
    const other = path.join(root, 'elsewhere');
    mkdirSync(other);
    const inPod = spawn('sleep', ['60'], { cwd: podDir, detached: true, stdio: 'ignore' });
    const naming = spawn('sh', ['-c', 'sleep 60; : "$0"', path.join(podDir, 'volumes')], { cwd: other, detached: true, stdio: 'ignore' });
    const unrelated = spawn('sleep', ['60'], { cwd: other, detached: true, stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 200));
      const groups = orphanGroups(pods);
      assert.ok(groups.includes(inPod.pid!), 'found by working directory');
      assert.ok(groups.includes(naming.pid!), 'found by its command line');
      assert.ok(!groups.includes(unrelated.pid!));
      assert.equal(reapOrphans(pods), 2);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(alive(inPod.pid!), false);
      assert.equal(alive(naming.pid!), false);
      assert.equal(alive(unrelated.pid!), true);
    } finally {
      for (const p of [inPod, naming, unrelated]) {
        try {
          process.kill(-p.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
});
