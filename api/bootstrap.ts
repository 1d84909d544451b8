// First start: with no account in the database, create the owner's account and write a
// full-authority token to <stateDir>/owner-token (mode 0600), which `make dev` users and the CLI read.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { AccountExistsError, countAccounts, createAccount } from '../lib/accounts.js';
import type { Db } from '../lib/db/connection.js';
import type { Services } from './services.js';

export const ownerTokenFile = 'owner-token';

export async function ensureFirstAccount(s: Services, kube: { kc: k8s.KubeConfig; core: k8s.CoreV1Api }, db: Db): Promise<boolean> {
  if ((await countAccounts(db)) > 0) return false;
  let account;
  try {
    account = await createAccount(db, kube.core, { email: s.config.api.adminEmail, name: 'owner' }, { rbac: kube.kc.makeApiClient(k8s.RbacAuthorizationV1Api), apiServiceAccount: s.config.api.serviceAccount });
  } catch (err) {
    if (err instanceof AccountExistsError) return false; // another replica won the race
    throw err;
  }
  const { token } = await s.tokens.issue(account.id, { name: 'owner' });
  await mkdir(s.config.stateDir, { recursive: true });
  const file = path.join(s.config.stateDir, ownerTokenFile);
  await writeFile(`${file}.tmp`, token + '\n', { mode: 0o600 });
  await rename(`${file}.tmp`, file);
  s.log.info({ account: account.id, email: account.email, namespace: account.namespace, tokenFile: file }, 'Created the first account');
  return true;
}
