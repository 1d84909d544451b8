// Reading a deploy request (JSON or an uploaded .tar.gz) into stored, counted input, for every route that takes one (deploys, previews).
import type { z } from 'zod';
import type { Caller, HandlerInput } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { invalid } from '../errors.js';
import type { deployBody, Keep, Prepared } from './deployer.js';

export const uploadDescription =
  'JSON: {"files": {"path": "content" | {"base64": "..."}}} for small trees, {"image": "ref", "port"?, "command"?, "args"?} for a container service, or {"compose": "<yaml>", "files"?}. Larger trees: the .tar.gz itself as the body with Content-Type application/gzip.';

/** Stores an upload as the caller's account's, counted against its storage (api/storage/account-storage.ts). */
export const keepFor =
  (s: Pick<ApiDeps, 'storage'>, caller: Caller, what: string): Keep =>
  (staged) =>
    s.storage.admit(caller.account.id, caller.account.namespace, staged, what);

/** Reads a deploy request (JSON or an uploaded .tar.gz) into a validated, stored Prepared. */
export function readDeployInput(
  s: Pick<ApiDeps, 'storage' | 'config'> & { deployer: Pick<ApiDeps['deployer'], 'prepareUpload' | 'prepareBody'> },
  input: HandlerInput<z.infer<typeof deployBody> | undefined, unknown>,
): Promise<Prepared> {
  const keep = keepFor(s, input.caller, "the deploy's tree");
  if (input.upload) return s.deployer.prepareUpload(input.upload.stream, s.config.deploys.uploadLimitBytes, keep);
  if (!input.body) throw invalid('invalid body: send files, image, compose, or a .tar.gz body');
  return s.deployer.prepareBody(input.body, keep);
}
