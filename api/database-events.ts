// database.ready, from the Databases' status as their controller writes it (the controllers hold no
// database credentials: decision 0015): each time a Database's Ready condition turns True, once,
// however many API replicas watch. The event's own table is the record: a transition (the Database's
// uid and the condition's lastTransitionTime) is written under the account's event lock only if no
// event names it yet. Only fresh transitions count, so a replica starting late does not tell of a
// database that has been Ready for weeks (its event may have been purged since).
import type * as k8s from '@kubernetes/client-node';
import type { Knex } from 'knex';
import { NamespaceAccounts } from '../lib/accounts.js';
import { lockEventLog, recordEvent } from '../lib/events.js';
import type { Logger } from '../lib/logger.js';
import type { Database } from '../lib/resources/index.js';

/** A transition older than this when first seen is not told. */
export const freshTransitionMs = 10 * 60_000;

export class DatabaseReadyRecorder {
  private readonly accounts: NamespaceAccounts;

  constructor(
    private readonly db: Knex,
    private readonly databases: k8s.ListWatch<Database>,
    private readonly log: Logger,
    private readonly clock: () => Date,
  ) {
    this.accounts = new NamespaceAccounts(db);
  }

  start(): void {
    this.databases.on('add', (d) => void this.observe(d));
    this.databases.on('update', (d) => void this.observe(d));
    for (const d of this.databases.list()) void this.observe(d);
  }

  async observe(database: Database): Promise<void> {
    const ready = database.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status !== 'True' || database.status?.phase !== 'Ready' || database.metadata.deletionTimestamp) return;
    const since = String(ready.lastTransitionTime);
    if (this.clock().getTime() - new Date(since).getTime() > freshTransitionMs) return;
    try {
      const account = await this.accounts.of(database.metadata.namespace!);
      if (!account) return;
      const name = database.metadata.name!;
      const uid = database.metadata.uid!;
      await this.db.transaction(async (tx) => {
        await lockEventLog(tx, account);
        const told = await tx('events')
          .where({ account_id: account, type: 'database.ready', subject: name })
          .whereRaw("data->>'uid' = ? and data->>'since' = ?", [uid, since])
          .first<{ id: string } | undefined>('id');
        if (told) return;
        await recordEvent(tx, account, 'database.ready', name, {
          database: name,
          host: database.status?.host ?? null,
          ...(database.spec.branchOf ? { branch_of: database.spec.branchOf } : {}),
          ...(database.spec.restoreFrom?.backup ? { restored_from: database.spec.restoreFrom.backup } : {}),
          uid,
          since,
        });
      });
    } catch (err) {
      this.log.warn({ err, database: database.metadata.name, namespace: database.metadata.namespace }, 'Recording database.ready failed');
    }
  }
}
