// A temporary directory removed when the test file's process exits: tests that left theirs behind
// filled /tmp with 68 copies of a 32 MiB file over a day of runs. Not node:test's after(): called
// from a before() hook it would run as soon as that hook ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
