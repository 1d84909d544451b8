// Route files share nothing with one another: what several routes use (finding the app a caller may
// touch, reading deploy input, presenters and response schemas) lives outside api/routes/
// (api/app-access.ts, api/deploys/input.ts, api/presenters/), so each route file reads on its own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';

const routes = path.join(repoRoot, 'api', 'routes');

describe('route files', () => {
  it('no file in api/routes/ imports another file in api/routes/', () => {
    const files = readdirSync(routes).filter((f) => f.endsWith('.ts'));
    assert.ok(files.length > 0, `no route files found in ${routes}`);
    const crossings: string[] = [];
    for (const name of files) {
      const file = path.join(routes, name);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.[^'"]+)['"]/g)) {
        const target = path.resolve(path.dirname(file), m[1]!);
        const rel = path.relative(routes, target);
        if (!rel.startsWith('..') && !path.isAbsolute(rel)) crossings.push(`api/routes/${name} imports ${m[1]}`);
      }
    }
    assert.deepEqual(crossings, []);
  });
});
