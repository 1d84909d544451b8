// Every shell script the platform runs parses (bash -n): hack/*.sh, the image entrypoints, CI's. A
// syntax error in an image's entrypoint only shows when a server starts, crash-looping.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';

const scripts = [
  ...readdirSync(path.join(repoRoot, 'hack'))
    .filter((f) => f.endsWith('.sh'))
    .map((f) => `hack/${f}`),
  ...readdirSync(path.join(repoRoot, 'hack/images'))
    .filter((f) => f.endsWith('.sh'))
    .map((f) => `hack/images/${f}`),
  '.ci/run',
];

describe('shell scripts', () => {
  it('parse, every one', () => {
    assert.ok(scripts.includes('hack/images/postgres-entrypoint.sh'));
    for (const s of scripts) {
      try {
        execFileSync('bash', ['-n', path.join(repoRoot, s)], { stdio: 'pipe' });
      } catch (err) {
        assert.fail(`${s}: ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
      }
    }
  });
});
