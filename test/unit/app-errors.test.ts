// Koa's own errors (a streamed body failing after the middleware returned) go to the one logger:
// a client hanging up mid-download is no error, a body that breaks is, and nothing is printed by
// Koa's default handler on stderr.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Koa from 'koa';
import { logAppErrors } from '../../api/middleware/errors.js';
import type { ApiState } from '../../api/state.js';
import { createLogger } from '../../lib/logger.js';

function serve(body: () => PassThrough) {
  const lines: Array<{ level: number; msg: string; err?: { code?: string } }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
      done();
    },
  });
  const app = new Koa<ApiState>();
  logAppErrors(app, createLogger('api', 'debug', stream));
  app.use((ctx) => {
    ctx.body = body();
  });
  const handle = app.callback();
  const server = http.createServer((req, res) => void handle(req, res)).listen(0, '127.0.0.1');
  return { lines, server, port: () => (server.address() as AddressInfo).port };
}

describe('logAppErrors', () => {
  it('logs a client gone mid-body at debug, a broken body as an error, and prints neither', async () => {
    const printed: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void printed.push(args);
    let current: PassThrough | undefined;
    const t = serve(() => {
      current = new PassThrough();
      current.write('x'.repeat(1024));
      return current;
    });
    try {
      await new Promise((r) => t.server.once('listening', r));
      // The client reads a little and hangs up.
      await new Promise<void>((resolve) => {
        const req = http.get({ port: t.port(), host: '127.0.0.1' }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => undefined);
      });
      for (let i = 0; i < 50 && !t.lines.length; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(
        t.lines.map((l) => [l.level, l.msg]),
        [[20, 'The client went away before the response ended']],
      );
      // The body itself breaks.
      const broken = new Promise<void>((resolve) => {
        const req = http.get({ port: t.port(), host: '127.0.0.1' }, (res) => {
          res.once('data', () => current!.destroy(new Error('the store failed')));
          res.on('error', () => resolve());
          res.on('close', () => resolve());
        });
        req.on('error', () => resolve());
      });
      await broken;
      for (let i = 0; i < 50 && t.lines.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(t.lines[1] && [t.lines[1].level, t.lines[1].msg], [50, 'Responding failed']);
      assert.deepEqual(printed, []);
    } finally {
      console.error = original;
      t.server.close();
    }
  });
});
