// Operations files share nothing with one another: what several operations use (finding the app a caller may
// touch, reading deploy input, presenters and response schemas) lives outside api/operations/
// (api/app-access.ts, api/deploys/input.ts, api/presenters/), so each operations file reads on its own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';

const operations = path.join(repoRoot, 'api', 'operations');

describe('operations files', () => {
  it('no file in api/operations/ imports another file in api/operations/', () => {
    const files = readdirSync(operations).filter((f) => f.endsWith('.ts'));
    assert.ok(files.length > 0, `no operations files found in ${operations}`);
    const crossings: string[] = [];
    for (const name of files) {
      const file = path.join(operations, name);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.[^'"]+)['"]/g)) {
        const target = path.resolve(path.dirname(file), m[1]!);
        const rel = path.relative(operations, target);
        if (!rel.startsWith('..') && !path.isAbsolute(rel)) crossings.push(`api/operations/${name} imports ${m[1]}`);
      }
    }
    assert.deepEqual(crossings, []);
  });
});
