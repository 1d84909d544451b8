// The event kinds: the list the code accepts is the list docs/api/events.md documents, and filters
// match as documented.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { eventKinds, knownFilter, matchesFilters, unknownFiltersMessage } from '../../lib/event-kinds.js';
import { repoRoot } from '../../lib/paths.js';

describe('event kinds', () => {
  it('are exactly the kinds docs/api/events.md documents, each with an example', async () => {
    const doc = await readFile(path.join(repoRoot, 'docs/api/events.md'), 'utf8');
    const documented = [...doc.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \| [^|]+ \| `\{.*\}` \|$/gm)].map((m) => m[1]);
    assert.deepEqual(documented, [...eventKinds]);
  });

  it('accept known kinds, prefix.* of known prefixes and *, and name the known ones otherwise', () => {
    assert.ok(knownFilter('deploy.live') && knownFilter('deploy.*') && knownFilter('*'));
    assert.ok(knownFilter('app.*') && knownFilter('machine.crashed') && knownFilter('webhook.disabled'));
    assert.ok(!knownFilter('nosuch.*') && !knownFilter('deploy.launched') && !knownFilter('deploy'));
    assert.match(unknownFiltersMessage(['deploy.live', 'nosuch.*'])!, /^unknown event kind "nosuch\.\*"; known: account\.created, /);
    assert.equal(unknownFiltersMessage(['sandbox.*']), undefined);
  });

  it('match events by exact kind, prefix and *', () => {
    assert.ok(matchesFilters('deploy.live', ['deploy.*']));
    assert.ok(matchesFilters('deploy.live', undefined) && matchesFilters('deploy.live', []));
    assert.ok(matchesFilters('deploy.live', ['*']));
    assert.ok(!matchesFilters('deploy.live', ['deploy.failed', 'sandbox.*']));
    assert.ok(!matchesFilters('deployment.live', ['deploy.*']));
  });
});
