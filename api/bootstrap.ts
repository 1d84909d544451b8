// First start: with no account in the database, create the owner's account and a full-authority
// token for it, written where the platform's operator reads it: <stateDir>/owner-token (mode 0600)
// for `make dev` users and the CLI, or on a cluster the Secret the chart made for it
// (SVC_OWNER_TOKEN_SECRET), as Argo CD hands out its initial admin secret.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { AccountExistsError, countAccounts, createAccount } from '../lib/accounts.js';
import type { Db } from '../lib/db/connection.js';
import { mergePatch } from '../lib/kube/client.js';
import type { ApiDeps } from './deps.js';

export const ownerTokenFile = 'owner-token';

export async function ensureFirstAccount(s: ApiDeps, kube: { kc: k8s.KubeConfig; core: k8s.CoreV1Api }, db: Db): Promise<boolean> {
  if ((await countAccounts(db)) > 0) return false;
  const secret = s.config.api.ownerTokenSecret;
  // The Secret must take the token before the account exists: a token made and then not kept
  // would leave an account nobody can use, and a later start would not make another.
  if (secret) await kube.core.patchNamespacedSecret({ ...secret, body: {} }, mergePatch);
  let account;
  try {
    account = await createAccount(
      db,
      kube.core,
      { email: s.config.api.adminEmail, name: 'owner' },
      { rbac: kube.kc.makeApiClient(k8s.RbacAuthorizationV1Api), apiServiceAccount: s.config.api.serviceAccount },
    );
  } catch (err) {
    if (err instanceof AccountExistsError) return false; // another replica won the race
    throw err;
  }
  const { token } = await s.tokens.issue(account.id, { name: 'owner' });
  let where: string;
  if (secret) {
    // A patch of the chart's Secret (the API may patch that one Secret and no other): the token
    // is in the database only as a hash, so this is the one place it is ever readable.
    await kube.core.patchNamespacedSecret({ ...secret, body: { stringData: { token } } }, mergePatch);
    where = `secret ${secret.namespace}/${secret.name}`;
  } else {
    await mkdir(s.config.stateDir, { recursive: true });
    const file = path.join(s.config.stateDir, ownerTokenFile);
    await writeFile(`${file}.tmp`, token + '\n', { mode: 0o600 });
    await rename(`${file}.tmp`, file);
    where = file;
  }
  s.log.info({ account: account.id, email: account.email, namespace: account.namespace, token: where }, 'Created the first account');
  return true;
}
