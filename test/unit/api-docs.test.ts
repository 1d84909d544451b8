// Documentation that must stay true to the code: every error code is documented, and the list of
// not-implemented operations matches the route table.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { errorRegistry } from '../../api/errors.js';
import { pendingOperations } from '../../api/operations/pending.js';
import { repoRoot } from '../../lib/paths.js';

const read = (file: string) => readFile(path.join(repoRoot, file), 'utf8');

describe('API documentation', () => {
  it('documents every error code with its status', async () => {
    const doc = await read('docs/api/errors.md');
    for (const [code, { status }] of Object.entries(errorRegistry)) {
      assert.match(doc, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), `docs/api/errors.md lacks ${code}`);
    }
  });

  it('lists exactly the operations that answer not_implemented', async () => {
    const doc = await read('docs/api/not-implemented.md');
    const listed = [...doc.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
    const pending = pendingOperations()
      .map((o) => `${o.method} ${o.path}`)
      .sort();
    assert.deepEqual(listed, pending);
  });
});
