import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../lib/logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it('names the component and redacts credentials wherever they appear', () => {
    const { lines, stream } = capture();
    const log = createLogger('api', 'info', stream);
    log.info(
      {
        req: { headers: { authorization: 'Bearer secret-token', cookie: 'svc_session=abc', accept: '*/*' } },
        res: { headers: { 'set-cookie': 'svc_session=def' } },
        token: 'tok',
        password: 'pw',
        secret: 'whsec_x',
        headers: { authorization: 'Bearer other', accept: 'text/html' },
        webhook: { url: 'https://example.test' },
      },
      'Handled request',
    );
    const [line] = lines;
    assert.ok(line);
    assert.equal(line.component, 'api');
    const text = JSON.stringify(line);
    for (const secret of ['secret-token', 'svc_session=abc', 'svc_session=def', '"tok"', '"pw"', 'whsec_x', 'Bearer other']) {
      assert.ok(!text.includes(secret), `${secret} leaked into ${text}`);
    }
    assert.ok(text.includes('*/*') && text.includes('https://example.test'), 'non-secret fields are kept');
  });
});
