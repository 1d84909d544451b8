// A build's log longer than the platform keeps keeps its end (api/builds/recorder.ts): the last
// bytes, from the first whole UTF-8 character on, so the kept log never starts mid-character.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endOf } from '../../api/builds/recorder.js';

describe("a build log's kept end", () => {
  it('keeps the last bytes, starting at a whole character', () => {
    assert.equal(endOf(Buffer.from('abcdef'), 3).toString(), 'def');
    // "é" is two bytes (c3 a9): cut between them, the lone continuation byte goes.
    const text = Buffer.from('xé-end');
    assert.equal(endOf(text, 5).toString(), '-end');
    assert.equal(endOf(text, 6).toString(), 'é-end');
    // "€" is three bytes: any cut inside it drops its rest.
    assert.equal(endOf(Buffer.from('€ok'), 3).toString(), 'ok');
    assert.equal(endOf(Buffer.from('short'), 100).toString(), 'short');
  });
});
