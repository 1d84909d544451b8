// What a sandbox's end leaves in the account's records: its `sandbox_seconds` (from creation to its
// end: the time it held a pod or waited for one) and an event (sandbox.expired, sandbox.destroyed,
// sandbox.failed) with its reason. Every API replica follows the Sandbox cache and records each end;
// the usage row's unique key (migration 0014) lets exactly one insert through, and only the one
// whose row went in records the event, in the same transaction: once, whoever sees it first.
//
// A Sandbox that ends while no API runs is recorded when one starts (the cache lists it), as long
// as it is kept (the retention window, 24 h by default).
import type { Db } from '../../lib/db/connection.js';
import { NamespaceAccounts } from '../../lib/accounts.js';
import { recordEvent } from '../../lib/events.js';
import { labels } from '../../lib/contract.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../lib/resources/index.js';

export function endEvent(s: Sandbox): 'sandbox.expired' | 'sandbox.destroyed' | 'sandbox.failed' | undefined {
  if (s.status?.phase === 'Failed') return 'sandbox.failed';
  if (s.status?.phase !== 'Ended') return undefined;
  return s.status.reason === 'Deleted' ? 'sandbox.destroyed' : 'sandbox.expired';
}

export class SandboxRecorder {
  private readonly recorded = new Set<string>();
  private readonly accounts: NamespaceAccounts;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {
    this.accounts = new NamespaceAccounts(db);
  }

  /** Records the sandbox's end if it has ended and this process has not recorded it yet. */
  observe(s: Sandbox): void {
    const uid = s.metadata.uid!;
    const type = endEvent(s);
    if (!type || !s.status?.endedAt || this.recorded.has(uid)) return;
    this.recorded.add(uid);
    this.record(s, type).catch((err: unknown) => {
      this.recorded.delete(uid); // the next change of it (or the next start) tries again
      this.log.warn({ err, sandbox: `${s.metadata.namespace}/${s.metadata.name}` }, 'Recording a sandbox end failed');
    });
  }

  private async accountOf(s: Sandbox): Promise<string | undefined> {
    // Made with kubectl: the account whose namespace it is in.
    return s.metadata.labels?.[labels.account] || this.accounts.of(s.metadata.namespace!);
  }

  private async record(s: Sandbox, type: NonNullable<ReturnType<typeof endEvent>>): Promise<void> {
    const account = await this.accountOf(s);
    if (!account) return;
    const started = new Date(s.metadata.creationTimestamp as unknown as string);
    const ended = new Date(s.status!.endedAt!);
    const seconds = Math.max(0, (ended.getTime() - started.getTime()) / 1000);
    await this.db.transaction(async (tx) => {
      const inserted = (await tx('usage_records')
        .insert({
          account_id: account,
          meter: 'sandbox_seconds',
          subject: s.metadata.uid!,
          quantity: seconds,
          started_at: started,
          ended_at: ended,
        })
        .onConflict(['account_id', 'meter', 'subject', 'started_at'])
        .ignore()
        .returning('id')) as unknown[];
      if (inserted.length === 0) return;
      await recordEvent(tx, account, type, s.metadata.name!, {
        sandbox: s.metadata.name,
        reason: s.status?.reason ?? null,
        message: s.status?.message ?? null,
        launch: s.status?.launch ?? null,
        seconds: Math.round(seconds * 1000) / 1000,
      });
    });
  }
}
