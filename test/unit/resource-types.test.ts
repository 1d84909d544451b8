import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { generateResourceTypes, generatedTypesPath } from '../../hack/resource-types.js';
import { repoRoot } from '../../lib/paths.js';

describe('generated resource types', () => {
  it('match the CRD manifests (run `make gen-types` after changing crds/)', async () => {
    const committed = await readFile(path.join(repoRoot, generatedTypesPath), 'utf8');
    const fresh = await generateResourceTypes(repoRoot);
    assert.equal(committed, fresh, `${generatedTypesPath} is stale: run make gen-types`);
  });

  it('declare every kind with its spec and status', async () => {
    const fresh = await generateResourceTypes(repoRoot);
    for (const kind of ['App', 'Build', 'Sandbox', 'Database']) {
      assert.match(fresh, new RegExp(`export interface ${kind} \\{`));
      assert.match(fresh, new RegExp(`export interface ${kind}Spec \\{`));
      assert.match(fresh, new RegExp(`export interface ${kind}Status \\{`));
    }
  });
});
