// stored_bytes of apps' volumes and of databases' branches (previews' copies, which go with their
// preview), volume.created and volume.deleted events and a branch's database.deleted, from the
// volume claims the controllers make and the garbage collector or DELETE /volumes removes (the
// controllers hold no database credentials: decision 0015). Every API replica observes; a sample's
// unique key (account, meter, subject, start) makes each creation and each deletion count once:
// a claim's creation at its creationTimestamp, its deletion at its deletionTimestamp (claims carry
// the pvc-protection finalizer, so the deleted object always shows one). A meter starting after
// claims went while none ran writes their zero then.
import type * as k8s from '@kubernetes/client-node';
import type { Knex } from 'knex';
import { NamespaceAccounts } from '../../lib/accounts.js';
import { labels } from '../../lib/contract.js';
import { recordEvent } from '../../lib/events.js';
import type { Logger } from '../../lib/logger.js';
import { claimBytes } from '../repositories/volumes.js';

const meter = 'stored_bytes';
/** An app volume's subject, or a database branch's (which goes with its preview, not through the API). */
const subjectOf = (claim: k8s.V1PersistentVolumeClaim) => {
  const l = claim.metadata?.labels ?? {};
  return l[labels.branchOf] && l[labels.database] ? `database/${l[labels.database]}` : `volume/${claim.metadata!.name}`;
};

export class VolumeMeter {
  private readonly accounts: NamespaceAccounts;

  constructor(
    private readonly db: Knex,
    private readonly claims: k8s.ListWatch<k8s.V1PersistentVolumeClaim>,
    private readonly log: Logger,
    private readonly clock: () => Date,
  ) {
    this.accounts = new NamespaceAccounts(db);
  }

  async start(): Promise<void> {
    this.claims.on('add', (c) => void this.observe(c, false));
    this.claims.on('delete', (c) => void this.observe(c, true));
    for (const c of this.claims.list()) await this.observe(c, false);
    await this.zeroGone().catch((err: unknown) => this.log.warn({ err }, 'Closing the storage of volumes gone meanwhile failed'));
  }

  private async observe(claim: k8s.V1PersistentVolumeClaim, deleted: boolean): Promise<void> {
    const l = claim.metadata?.labels ?? {};
    const branch = l[labels.branchOf] && l[labels.database];
    if (!l[labels.volume] && !branch) return;
    try {
      const account = await this.accounts.of(claim.metadata!.namespace!);
      if (!account) return;
      const at = deleted
        ? new Date((claim.metadata!.deletionTimestamp as unknown as string | undefined) ?? this.clock())
        : new Date(claim.metadata!.creationTimestamp as unknown as string);
      const bytes = deleted ? 0 : claimBytes(claim);
      await this.db.transaction(async (tx) => {
        const inserted = await tx('usage_records')
          .insert({ account_id: account, meter, subject: subjectOf(claim), quantity: bytes, started_at: at, ended_at: at })
          .onConflict(['account_id', 'meter', 'subject', 'started_at'])
          .ignore()
          .returning('id');
        if (!inserted.length) return;
        // A branch's creation is the API's to tell (with its preview); its deletion, with the preview, is told here.
        if (branch) {
          if (deleted)
            await recordEvent(tx, account, 'database.deleted', l[labels.database]!, {
              database: l[labels.database],
              branch_of: l[labels.branchOf],
              deletion_policy: 'drop',
            });
          return;
        }
        const data = {
          volume: claim.metadata!.name,
          app: l[labels.app],
          machine: Number(l[labels.machine]),
          size_bytes: claimBytes(claim),
        };
        await recordEvent(tx, account, deleted ? 'volume.deleted' : 'volume.created', claim.metadata!.name!, data);
      });
    } catch (err) {
      this.log.warn({ err, claim: claim.metadata?.name, namespace: claim.metadata?.namespace }, 'Metering a volume failed');
    }
  }

  /**
   * Volumes whose latest sample still counts bytes but whose claim is gone: their zero, now. (Not
   * database branches: a `database/` sample may be a database whose claim is not made yet.)
   */
  private async zeroGone(): Promise<void> {
    const rows = await this.db('usage_records')
      .distinctOn(['account_id', 'subject'])
      .where({ meter })
      .where('subject', 'like', 'volume/%')
      .orderBy([{ column: 'account_id' }, { column: 'subject' }, { column: 'started_at', order: 'desc' }])
      .select<Array<{ account_id: string; subject: string; quantity: string | number }>>('account_id', 'subject', 'quantity');
    const present = new Set(
      this.claims
        .list()
        .filter((c) => !c.metadata?.deletionTimestamp)
        .map(subjectOf),
    );
    const now = this.clock();
    for (const r of rows) {
      if (Number(r.quantity) === 0 || present.has(r.subject)) continue;
      await this.db('usage_records')
        .insert({ account_id: r.account_id, meter, subject: r.subject, quantity: 0, started_at: now, ended_at: now })
        .onConflict(['account_id', 'meter', 'subject', 'started_at'])
        .ignore();
    }
  }
}
