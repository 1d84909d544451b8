// The background half of domain verification: every second, the claims due a check are taken
// (FOR UPDATE SKIP LOCKED with a lease, so API replicas share them without a leader) and checked,
// a few at a time; a check that throws is logged and tried again after its lease.
import type { DomainClaims } from '../../lib/domains/claims.js';
import type { Logger } from '../../lib/logger.js';
import type { DomainActions } from './actions.js';

const tickMs = 1000;
const parallel = 5;

export class DomainVerifier {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly d: {
      claims: Pick<DomainClaims, 'takeDue'>;
      actions: Pick<DomainActions, 'checkClaim'>;
      log: Logger;
      clock: () => Date;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .then(() => undefined)
        .catch((err: unknown) => this.d.log.warn({ err }, 'A pass of the domain verifier failed; the next one tries again'))
        .finally(() => (this.running = undefined));
    }, tickMs);
    this.timer.unref();
  }

  /** Checks every domain due now (tests call it to run a pass at once). */
  async pass(): Promise<number> {
    const due = await this.d.claims.takeDue(this.d.clock());
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(parallel, due.length) }, async () => {
        while (next < due.length) {
          const claim = due[next++]!;
          await this.d.actions
            .checkClaim(claim)
            .catch((err: unknown) => this.d.log.warn({ err, domain: claim.name }, 'A domain check failed; it is tried again'));
        }
      }),
    );
    return due.length;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
