// Operator commands: they use the platform's own configuration (SVC_DATABASE_URL, KUBECONFIG).
import * as k8s from '@kubernetes/client-node';
import { AccountExistsError, createAccount } from '../lib/accounts.js';
import { loadConfig } from '../lib/config.js';
import { connect } from '../lib/db/connection.js';
import { migrateLatest } from '../lib/db/migrate.js';
import { loadKubeConfig } from '../lib/kube/client.js';
import { TokenStore } from '../lib/tokens/store.js';
import { UsageError } from './token-commands.js';

export async function createAccountCommand(email: string, name?: string) {
  const config = loadConfig();
  const db = connect(config.databaseUrl, { poolMax: 2 });
  try {
    await migrateLatest(db);
    const kc = loadKubeConfig(config.kubeconfig);
    const account = await createAccount(
      db,
      kc.makeApiClient(k8s.CoreV1Api),
      { email, name },
      { rbac: kc.makeApiClient(k8s.RbacAuthorizationV1Api), apiServiceAccount: config.api.serviceAccount },
    ).catch((err: unknown) => {
      throw err instanceof AccountExistsError ? new UsageError(err.message) : err;
    });
    const { token, record } = await new TokenStore(db).issue(account.id, { name: 'owner' });
    return {
      account: { id: account.id, email: account.email, name: account.name, namespace: account.namespace },
      token,
      expires_at: record.expiresAt,
    };
  } finally {
    await db.destroy();
  }
}
