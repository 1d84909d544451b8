import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { connect, type Db } from '../../lib/db/connection.js';
import { createLogger } from '../../lib/logger.js';
import { freePort } from '../support/ports.js';

/** What a query to a server nobody listens on prints with console.log (knex's default logger). */
async function printedBy(db: Db): Promise<unknown[][]> {
  const printed: unknown[][] = [];
  const original = console.log;
  console.log = (...args: unknown[]) => void printed.push(args);
  try {
    await assert.rejects(db.raw('select 1'));
  } finally {
    console.log = original;
    await db.destroy();
  }
  return printed;
}

describe('connect', () => {
  it("sends knex's own messages to the component's log as JSON, never as plain lines on stdout", async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    // Nothing listens there: knex warns that it could not acquire a connection.
    const db = connect(`postgres://svc@127.0.0.1:${await freePort()}/svc`, {
      log: createLogger('api', 'info', stream),
      acquireTimeoutMs: 2_000,
    });
    assert.deepEqual(await printedBy(db), []);
    const warning = lines.find((l) => l.msg === 'Database client warning');
    assert.ok(warning, `no warning logged: ${JSON.stringify(lines)}`);
    assert.equal(warning.component, 'api');
    assert.match(String(warning.knex), /^Acquire connection error: .*ECONNREFUSED/s);
  });

  it('says nothing anywhere without a log', async () => {
    const db = connect(`postgres://svc@127.0.0.1:${await freePort()}/svc`, { acquireTimeoutMs: 2_000 });
    assert.deepEqual(await printedBy(db), []);
  });
});
