// What the processes share goes through lib/ (lib/contract.ts for what they must agree on): no
// process imports another process's folder, so each can be read, built and changed on its own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../lib/paths.js';

const processes = [
  'api',
  'controllers',
  'ingress-auth',
  'runtime',
  'policy-agent',
  'local-volumes',
  'registry-auth',
  'sandbox-agent',
  'builder',
  'cli',
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('process boundaries', () => {
  it("no process imports from another process's folder", () => {
    const crossings: string[] = [];
    for (const own of processes) {
      for (const file of sources(path.join(repoRoot, own))) {
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
          const target = path.relative(repoRoot, path.resolve(path.dirname(file), m[1]!));
          const top = target.split(path.sep)[0]!;
          if (processes.includes(top) && top !== own) crossings.push(`${path.relative(repoRoot, file)} imports ${m[1]}`);
        }
      }
    }
    assert.deepEqual(crossings, []);
  });
});
