import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { keepWatching, type Restartable } from '../../lib/kube/keep-watching.js';
import { createLogger } from '../../lib/logger.js';

describe('keepWatching', () => {
  it('restarts a failed informer with growing back-off, and says when it is back', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const lines: Array<{ msg: string; level: number; retryInMs?: number }> = [];
    const log = createLogger(
      'test',
      'info',
      new Writable({ write: (c: Buffer, _e, done) => (lines.push(JSON.parse(c.toString()) as (typeof lines)[number]), done()) }),
    );
    const emitter = new EventEmitter();
    let starts = 0;
    const informer = {
      on: (event: string, cb: (...a: unknown[]) => void) => emitter.on(event, cb),
      start: async () => {
        starts += 1;
      },
    } as unknown as Restartable;
    keepWatching(informer, 'pods', log);
    emitter.emit('error', new Error('connection reset'));
    t.mock.timers.tick(999);
    assert.equal(starts, 0);
    t.mock.timers.tick(1);
    assert.equal(starts, 1);
    emitter.emit('error', new Error('again'));
    t.mock.timers.tick(1999);
    assert.equal(starts, 1);
    t.mock.timers.tick(1);
    assert.equal(starts, 2);
    assert.deepEqual(
      lines.map((l) => l.retryInMs),
      [1000, 2000],
    );
    emitter.emit('connect');
    assert.equal(lines.at(-1)?.msg, 'Watch resumed');
    emitter.emit('error', new Error('later'));
    assert.equal(lines.at(-1)?.retryInMs, 1000, 'back-off starts over after a recovery');
  });

  it('does not restart an informer that was stopped on purpose (its aborted watch reports an error)', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const log = createLogger('test', 'silent');
    const emitter = new EventEmitter();
    let starts = 0;
    const informer = {
      stopped: false,
      on: (event: string, cb: (...a: unknown[]) => void) => emitter.on(event, cb),
      start: async () => {
        starts += 1;
      },
    };
    keepWatching(informer as unknown as Restartable, 'apps', log);
    emitter.emit('error', new Error('connection reset'));
    informer.stopped = true; // stop() while a restart is pending
    t.mock.timers.tick(1000);
    assert.equal(starts, 0);
    emitter.emit('error', new Error('aborted'));
    t.mock.timers.tick(60_000);
    assert.equal(starts, 0);
  });
});
