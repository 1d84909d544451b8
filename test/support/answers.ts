// Assertions on what an API answered and on what an action refused, shared by the fast handler and
// action tests (test/unit/handlers-*.test.ts, test/unit/*-actions.test.ts).
import assert from 'node:assert/strict';
import { DomainError } from '../../lib/errors.js';

/** A response as test/support/fake-api.ts returns it. */
export interface Answer {
  status: number;
  body: unknown;
  text: string;
}

/** The body of an answer with `status`. */
export function ok<T>(res: Answer, status: number): T {
  assert.equal(res.status, status, res.text);
  return res.body as T;
}

/** The message of an error answer with `status`: a body of `{error}` only, matching `message` if given. */
export function errorOf(res: Answer, status: number, message?: RegExp): string {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(Object.keys(res.body as object), ['error'], res.text);
  const e = (res.body as { error: string }).error;
  if (message) assert.match(e, message);
  return e;
}

/** For assert.rejects: a DomainError of `kind` whose message is `message` (or matches it). */
export const refusal = (kind: DomainError['kind'], message: string | RegExp) => (err: unknown) => {
  assert.ok(err instanceof DomainError, `expected a DomainError, got ${String(err)}`);
  assert.equal(err.kind, kind);
  if (typeof message === 'string') assert.equal(err.message, message);
  else assert.match(err.message, message);
  return true;
};

/** The DomainError `fn` fails with (fails the test when it does not). */
export async function refusalOf(fn: () => Promise<unknown>): Promise<DomainError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof DomainError, `expected a DomainError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a refusal');
}
