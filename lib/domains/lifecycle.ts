// What one check of a domain's records makes of its status and schedule: a pure function of the
// status it had and what DNS answered (docs/decisions/0027-app-domains.md). The verifier applies it.

export type DomainPhase = 'Pending' | 'Verified' | 'Misconfigured' | 'Failed';

/** What a check found: both records right or not, and in words why not. */
export interface CheckOutcome {
  ok: boolean;
  /** CamelCase: Verified, OwnershipMissing, RoutingWrong, ... */
  reason: string;
  message: string;
}

/** The state a check starts from. */
export interface DomainState {
  phase: DomainPhase;
  createdAt: Date;
  /** When it last became verified; undefined: never was. */
  verifiedAt: Date | undefined;
  /** When its phase began (the Verified condition's last transition, else its creation). */
  phaseSince: Date;
  /** The last wait between two checks while not verified. */
  backoffMs: number;
}

export interface DomainStep {
  phase: DomainPhase;
  reason: string;
  message: string;
  verifiedAt: Date | undefined;
  nextCheckAt: Date;
  backoffMs: number;
  /** The account event this step tells, if its phase changed in a way a person must hear of. */
  event?: 'domain.verified' | 'domain.misconfigured' | 'domain.failed';
  /** The claim is dropped: nobody verified the name in time, another account may take it. */
  release: boolean;
}

/** A name nobody verifies in this long is given up, so an account cannot squat a name it does not own. */
export const pendingLimitMs = 7 * 24 * 3600_000;
/** The first check after adding, and the first wait of the back-off. */
export const firstCheckMs = 2000;
/** The back-off's ceiling for the first hour of a phase, and after it. */
const fastCeilingMs = 60_000;
const slowCeilingMs = 600_000;
/** The DNS server did not answer: try again soon, changing nothing. */
export const dnsRetryMs = 30_000;

export function afterCheck(state: DomainState, outcome: CheckOutcome, now: Date, o: { recheckMs: number }): DomainStep {
  if (outcome.ok) {
    const became = state.phase !== 'Verified';
    return {
      phase: 'Verified',
      reason: 'Verified',
      message: 'both records are published: the domain routes to the app',
      verifiedAt: became ? now : (state.verifiedAt ?? now),
      nextCheckAt: new Date(now.getTime() + o.recheckMs),
      backoffMs: 0,
      ...(became ? { event: 'domain.verified' as const } : {}),
      release: false,
    };
  }
  const ceiling = now.getTime() - state.phaseSince.getTime() < 3600_000 ? fastCeilingMs : slowCeilingMs;
  const backoffMs = Math.min(ceiling, Math.max(firstCheckMs, Math.round(state.backoffMs * 1.5)));
  const next = new Date(now.getTime() + backoffMs);
  if (state.verifiedAt !== undefined && state.phase !== 'Failed') {
    return {
      phase: 'Misconfigured',
      reason: outcome.reason,
      message: `the records changed since the domain was verified, it no longer routes: ${outcome.message}`,
      verifiedAt: state.verifiedAt,
      // Fast again: the fix is what a person waits for.
      nextCheckAt: state.phase === 'Verified' ? new Date(now.getTime() + firstCheckMs) : next,
      backoffMs: state.phase === 'Verified' ? firstCheckMs : backoffMs,
      ...(state.phase === 'Verified' ? { event: 'domain.misconfigured' as const } : {}),
      release: false,
    };
  }
  if (now.getTime() - state.createdAt.getTime() >= pendingLimitMs) {
    return {
      phase: 'Failed',
      reason: 'Expired',
      message: `no right records in ${pendingLimitMs / 86_400_000} days: the name is released; add it again to retry (${outcome.message})`,
      verifiedAt: undefined,
      nextCheckAt: now,
      backoffMs,
      event: 'domain.failed',
      release: true,
    };
  }
  return {
    phase: 'Pending',
    reason: outcome.reason,
    message: outcome.message,
    verifiedAt: undefined,
    nextCheckAt: next,
    backoffMs,
    release: false,
  };
}
