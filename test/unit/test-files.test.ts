// hack/test.sh runs test files side by side, except a file whose first lines say
// `// test-runs-alone: <why>`: those run after the others, one at a time. A file that stops or
// restarts a shared part of the platform (test/support/daemons.ts) would fail the files beside it,
// so it must say so.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? testFiles(p) : e.name.endsWith('.test.ts') ? [p] : [];
  });
}

const runsAlone = (text: string) =>
  text
    .split('\n')
    .slice(0, 20)
    .some((line) => /^\/\/ test-runs-alone: \S/.test(line));

describe('test files', () => {
  it('every file that stops a shared part of the platform runs alone, and says why', () => {
    const files = testFiles(path.join(repoRoot, 'test'));
    assert.ok(files.length > 50, `found ${files.length} test files`);
    const stoppers = files.filter((f) => /from '\.\.\/support\/daemons\.js'/.test(readFileSync(f, 'utf8')));
    assert.ok(stoppers.length >= 2, 'the reliability and usage files stop the controllers');
    const notAlone = stoppers.filter((f) => !runsAlone(readFileSync(f, 'utf8'))).map((f) => path.relative(repoRoot, f));
    assert.deepEqual(notAlone, []);
  });

  it('reads the marker only as a whole comment line near the top', () => {
    assert.equal(runsAlone('// test-runs-alone: it restarts the apiserver\nimport x;'), true);
    assert.equal(runsAlone('// test-runs-alone:\nimport x;'), false, 'a reason is required');
    assert.equal(runsAlone(`${'\n'.repeat(25)}// test-runs-alone: too far down`), false);
    assert.equal(runsAlone("const s = '// test-runs-alone: in a string';"), false);
  });
});
