// A Git call's refusal as the request's error, for every route that reaches a repository (builds, imports).
import { GitError } from '../../lib/builds/git.js';
import { ApiError, invalid } from '../errors.js';

/** Runs a Git call, its refusal turned into the request's error (400, or 503 when unreachable). */
export async function gitOrApiError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof GitError) throw err.kind === 'unreachable' ? new ApiError('unavailable', err.message) : invalid(err.message);
    throw err;
  }
}
