// Accounts are tenants. Each one owns a Kubernetes namespace, created together with it, where its
// apps, builds, sandboxes and databases live. Shared by the API (first start) and `svc admin`.
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import type { Db } from './db/connection.js';
import { recordEvent } from './events.js';
import { kubeStatus } from './kube/client.js';
import { labels, managers } from './contract.js';

export interface Account {
  id: string;
  email: string;
  name: string;
  namespace: string;
  createdAt: Date;
}

interface AccountRow {
  id: string;
  email: string;
  name: string;
  namespace: string;
  created_at: Date;
}

export const accountLabel = labels.account;

/**
 * Labels an account namespace is created with: Pod Security Admission enforces `restricted` on every
 * pod in it from the first one (the controllers keep them there, controllers/account/).
 */
export const podSecurityLabels: Readonly<Record<string, string>> = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
  'pod-security.kubernetes.io/warn': 'restricted',
  'pod-security.kubernetes.io/audit': 'restricted',
};

export function toAccount(row: AccountRow): Account {
  return { id: row.id, email: row.email, name: row.name, namespace: row.namespace, createdAt: row.created_at };
}

export async function getAccount(db: Db, id: string): Promise<Account | undefined> {
  const row = (await db('accounts').where({ id }).first()) as AccountRow | undefined;
  return row && toAccount(row);
}

/** The ID of the account whose namespace `namespace` is, if any. */
export async function accountIdOfNamespace(db: Db, namespace: string): Promise<string | undefined> {
  const row = await db('accounts').where({ namespace }).first<{ id: string } | undefined>('id');
  return row?.id;
}

/**
 * accountIdOfNamespace for the processes that ask it of every object they watch: an account's
 * namespace never changes hands, so an answer is kept; "no account" is asked again after a minute
 * (another platform's database shares the cluster in tests; a namespace made before its row).
 */
export class NamespaceAccounts {
  private readonly known = new Map<string, { id: string | undefined; at: number }>();

  constructor(private readonly db: Db) {}

  async of(namespace: string): Promise<string | undefined> {
    const hit = this.known.get(namespace);
    if (hit && (hit.id || Date.now() - hit.at < 60_000)) return hit.id;
    const id = await accountIdOfNamespace(this.db, namespace);
    this.known.set(namespace, { id, at: Date.now() });
    return id;
  }
}

export async function countAccounts(db: Db): Promise<number> {
  const [row] = await db('accounts').count<Array<{ n: string | number }>>({ n: '*' });
  return Number(row?.n ?? 0);
}

export class AccountExistsError extends Error {
  constructor(email: string) {
    super(`an account with email ${email} already exists`);
    this.name = 'AccountExistsError';
  }
}

/** The ClusterRole and RoleBinding that give the API the Secrets of one account namespace (the chart's RBAC). */
export const apiTenantRole = 'svc-api-tenant';

/**
 * Binds the API's ServiceAccount to svc-api-tenant in an account namespace: on a cluster installed by
 * the chart, the API holds Secret rights in account namespaces only, one binding each (an admission
 * policy keeps it from binding anywhere else). Idempotent.
 */
export async function bindApiToNamespace(
  rbac: k8s.RbacAuthorizationV1Api,
  namespace: string,
  sa: { namespace: string; name: string },
): Promise<void> {
  try {
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: apiTenantRole, labels: { [labels.managedBy]: managers.platform } },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: apiTenantRole },
        subjects: [{ kind: 'ServiceAccount', name: sa.name, namespace: sa.namespace }],
      },
    });
  } catch (err) {
    if (kubeStatus(err) !== 409) throw err;
  }
}

/**
 * Creates the account row and its namespace in one step: the row is committed only once the
 * namespace exists (and, on a cluster, the API's RoleBinding in it), and a namespace created for a
 * row that then fails is deleted again.
 */
export async function createAccount(
  db: Db,
  core: k8s.CoreV1Api,
  input: { email: string; name?: string },
  opts: { rbac?: k8s.RbacAuthorizationV1Api; apiServiceAccount?: { namespace: string; name: string } | undefined } = {},
): Promise<Account> {
  const email = input.email.trim().toLowerCase();
  const suffix = randomBytes(6).toString('hex');
  const row: AccountRow = {
    id: `acct_${suffix}`,
    email,
    name: input.name?.trim() || email.split('@')[0]!,
    namespace: `svc-acct-${suffix}`,
    created_at: new Date(),
  };
  return db.transaction(async (trx) => {
    try {
      await trx('accounts').insert(row);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new AccountExistsError(email);
      throw err;
    }
    try {
      await core.createNamespace({
        body: {
          metadata: {
            name: row.namespace,
            labels: { [accountLabel]: row.id, [labels.managedBy]: managers.platform, ...podSecurityLabels },
          },
        },
      });
    } catch (err) {
      if (kubeStatus(err) !== 409) throw err;
    }
    try {
      if (opts.rbac && opts.apiServiceAccount) await bindApiToNamespace(opts.rbac, row.namespace, opts.apiServiceAccount);
      await recordEvent(trx, row.id, 'account.created', row.id, { email });
    } catch (err) {
      await core.deleteNamespace({ name: row.namespace }).catch(() => undefined);
      throw err;
    }
    return toAccount(row);
  });
}
