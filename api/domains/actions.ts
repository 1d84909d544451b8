// What the API decides about custom domains (docs/decisions/0027-app-domains.md): adding one (a
// usable name, within the limits, claimed for this account only), removing one (routing stops at
// once, the name is free), and checking one's records now or when the verifier finds it due.
// Handlers parse and present; the decisions are made here and raise domain errors (lib/errors.ts).
import type { DomainClaim, DomainClaims } from '../../lib/domains/claims.js';
import { DnsUnavailableError, type DomainCheck } from '../../lib/domains/check.js';
import { afterCheck, dnsRetryMs, firstCheckMs } from '../../lib/domains/lifecycle.js';
import { parseDomainName, type DomainName } from '../../lib/domains/names.js';
import { apexNeedsEdge, expectedRecords, type ExpectedRecord } from '../../lib/domains/records.js';
import { DomainError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Actor } from '../deploys/actions.js';
import type { ApiDeps } from '../deps.js';
import type { AccountLock } from '../quotas.js';
import type { AppRecord } from '../repositories/app-record.js';
import type { DomainRecord, DomainRepository, StatusPatch } from '../repositories/domains.js';

export interface DomainActionDeps {
  domains: Pick<DomainRepository, 'list' | 'get' | 'create' | 'delete' | 'writeStatus'>;
  claims: Pick<DomainClaims, 'tokenOf' | 'get' | 'counts' | 'claim' | 'release' | 'schedule'>;
  lock: Pick<AccountLock, 'hold'>;
  events: Pick<ApiDeps['events'], 'record'>;
  /** Checks a domain's records against what DNS answers (lib/domains/check.ts with the configured resolvers). */
  check: (d: DomainName, expected: ExpectedRecord[]) => Promise<DomainCheck>;
  /**
   * The domain's certificate (docs/decisions/0028-https.md): removing a domain deletes its Secret at
   * once (the certificate issuer's sweep would, a pass later). Optional: tests of other things skip it.
   */
  /** Deletes the certificate of `domain` issued for this namespace's Domain (never another account's of the same name). */
  certificates?: { remove: (domain: string, namespace: string) => Promise<void> };
  settings: {
    appsDomain: string;
    edgeAddresses: readonly string[];
    perApp: number;
    perAccount: number;
    recheckMs: number;
    /** The platform's DNS-01 zone: wildcards are then asked to delegate `_acme-challenge` there. */
    dns01Zone?: string;
  };
  log: Logger;
  clock: () => Date;
}

/** A domain as answered: its parsed name, its resource, and the records to publish for it. */
export interface DomainView {
  domain: DomainName;
  record: DomainRecord;
  expected: ExpectedRecord[];
}

export class DomainActions {
  constructor(private readonly d: DomainActionDeps) {}

  private parse(raw: string): DomainName {
    const parsed = parseDomainName(raw, { appsDomain: this.d.settings.appsDomain });
    if (!parsed.ok) throw new DomainError('invalid', `${JSON.stringify(raw)} is not a domain the platform can serve: ${parsed.message}`);
    return parsed.name;
  }

  private async view(accountId: string, record: DomainRecord): Promise<DomainView> {
    const domain = this.parse(record.name);
    return { domain, record, expected: await this.expected(accountId, domain, record.app) };
  }

  private async expected(accountId: string, domain: DomainName, app: string): Promise<ExpectedRecord[]> {
    return expectedRecords(domain, {
      token: await this.d.claims.tokenOf(accountId),
      appHost: `${app}.${this.d.settings.appsDomain}`,
      edgeAddresses: this.d.settings.edgeAddresses,
      ...(this.d.settings.dns01Zone ? { dns01: { zone: this.d.settings.dns01Zone, accountId } } : {}),
    });
  }

  /** The app's domains. */
  async list(actor: Actor, app: AppRecord): Promise<DomainView[]> {
    return Promise.all(this.d.domains.list(actor.namespace, app.name).map((r) => this.view(actor.accountId, r)));
  }

  /** One of the app's domains, by its name as given (Unicode or ASCII). */
  async get(actor: Actor, app: AppRecord, raw: string): Promise<DomainView> {
    return this.view(actor.accountId, this.find(actor, app, raw));
  }

  private find(actor: Actor, app: AppRecord, raw: string): DomainRecord {
    const parsed = parseDomainName(raw, { appsDomain: this.d.settings.appsDomain });
    const record = parsed.ok ? this.d.domains.get(actor.namespace, parsed.name.name) : undefined;
    if (!record || record.app !== app.name) throw new DomainError('not_found', `domain ${raw} not found on app ${app.name}`);
    return record;
  }

  /**
   * Adds a domain to the app: claimed for the account (a 409 if anyone else holds it, or another of
   * its apps), within the limits, taken under the account's lock; then its resource, checked 2 s
   * later. Adding it again answers the one there (`created: false`); a failed one is claimed anew.
   * `declared`: named by the App's `spec.domains` (api/domains/declared.ts), which may remove it again.
   */
  async add(actor: Actor, app: AppRecord, raw: string, opts: { declared?: boolean } = {}): Promise<{ view: DomainView; created: boolean }> {
    const domain = this.servable(raw);
    const { created, record } = await this.d.lock.hold(actor.accountId, async () => {
      const now = this.d.clock();
      // Read under the lock: an add of the same name just before this one has its resource cached by now.
      const existing = this.d.domains.get(actor.namespace, domain.name);
      const held = await this.refusal(actor, app, domain);
      if (held && existing && existing.phase !== 'Failed') return { created: false, record: existing };
      if (!held) {
        const claim = await this.d.claims.claim({
          name: domain.name,
          accountId: actor.accountId,
          namespace: actor.namespace,
          app: app.name,
          now,
          firstCheckAt: new Date(now.getTime() + firstCheckMs),
        });
        if (claim.accountId !== actor.accountId || claim.app !== app.name)
          throw new DomainError(
            'conflict',
            `${domain.name} is held by ${claim.accountId === actor.accountId ? `app ${claim.app}` : 'another account'}`,
          );
      }
      try {
        if (existing?.phase === 'Failed') await this.d.domains.delete(actor.namespace, domain.name);
        return { created: true, record: await this.d.domains.create(actor.namespace, domain.name, { name: app.name, id: app.id }, opts) };
      } catch (err) {
        // Nothing half-written: no resource, no claim.
        await this.d.claims.release(domain.name, actor.accountId);
        throw err;
      }
    });
    if (created) await this.d.events.record(actor.accountId, 'domain.added', app.name, { domain: domain.name, app: app.name });
    return { view: { domain, record, expected: await this.expected(actor.accountId, domain, app.name) }, created };
  }

  /**
   * Whether the name could be added to the app now, without adding it (a 4XX DomainError if not):
   * asked before something that cannot be undone, such as buying the name.
   */
  async check(actor: Actor, app: AppRecord, raw: string): Promise<void> {
    await this.refusal(actor, app, this.servable(raw));
  }

  /** The name parsed, when this platform could serve it at all (before any lock is taken). */
  private servable(raw: string): DomainName {
    const domain = this.parse(raw);
    const refused = apexNeedsEdge(domain, this.d.settings.edgeAddresses);
    if (refused) throw new DomainError('invalid', refused);
    return domain;
  }

  /** Why the name cannot be added to the app (thrown), or the account's claim of it when it is this app's already. */
  private async refusal(actor: Actor, app: AppRecord, domain: DomainName): Promise<DomainClaim | undefined> {
    const held = await this.d.claims.get(domain.name);
    if (held && held.accountId !== actor.accountId) throw new DomainError('conflict', `${domain.name} is held by another account`);
    if (held && held.app !== app.name) throw new DomainError('conflict', `${domain.name} is already a domain of app ${held.app}`);
    if (held) return held;
    const counts = await this.d.claims.counts(actor.accountId, app.name);
    if (counts.app >= this.d.settings.perApp)
      throw new DomainError(
        'quota_exceeded',
        `app ${app.name} has ${counts.app} domains, its limit is ${this.d.settings.perApp}; remove one first`,
      );
    if (counts.account >= this.d.settings.perAccount)
      throw new DomainError(
        'quota_exceeded',
        `the account has ${counts.account} domains, its limit is ${this.d.settings.perAccount}; remove one first`,
      );
    return undefined;
  }

  /** Removes a domain: its resource first (ingress-auth stops routing it), its certificate, then its claim. */
  async remove(actor: Actor, app: AppRecord, raw: string): Promise<void> {
    const record = this.find(actor, app, raw);
    await this.d.domains.delete(actor.namespace, record.name);
    // Never fails the removal: a Secret left behind serves nobody, and the issuer's sweep deletes it.
    await this.d.certificates
      ?.remove(record.name, actor.namespace)
      .catch((err: unknown) =>
        this.d.log.warn({ err, domain: record.name }, "Deleting a removed domain's certificate failed; the issuer's sweep retries"),
      );
    await this.d.claims.release(record.name, actor.accountId);
    await this.d.events.record(actor.accountId, 'domain.removed', app.name, { domain: record.name, app: app.name });
  }

  /** Checks the domain's records now and answers what it found. */
  async verify(actor: Actor, app: AppRecord, raw: string): Promise<DomainView> {
    const record = this.find(actor, app, raw);
    const claim = await this.d.claims.get(record.name);
    if (!claim || claim.accountId !== actor.accountId)
      throw new DomainError('conflict', `${record.name} is no longer claimed by the account (it failed): add it again`);
    const view = await this.view(actor.accountId, record);
    try {
      // What this check wrote, not the cache, which may not have caught up yet.
      return { ...view, record: (await this.checkAndRecord(view, claim)) ?? record };
    } catch (err) {
      if (err instanceof DnsUnavailableError)
        throw new DomainError('unavailable', `DNS did not answer the check: ${err.message}; retry later`, err);
      throw err;
    }
  }

  /**
   * One check of a claimed domain (the verifier's, or a person's through verify): its status
   * written, its next check scheduled, an event if its phase changed as a person must hear of.
   */
  async checkClaim(claim: DomainClaim): Promise<void> {
    const record = this.d.domains.get(claim.namespace, claim.name);
    if (!record) {
      // The resource went (its App was deleted, or someone deleted it with kubectl): so does the claim.
      await this.d.claims.release(claim.name, claim.accountId);
      return;
    }
    try {
      await this.checkAndRecord(await this.view(claim.accountId, record), claim);
    } catch (err) {
      if (!(err instanceof DnsUnavailableError)) throw err;
      this.d.log.warn({ err, domain: claim.name }, 'DNS did not answer a domain check; it is retried');
      const now = this.d.clock();
      await this.d.claims.schedule(claim.name, { ...claim, nextCheckAt: new Date(now.getTime() + dnsRetryMs) });
    }
  }

  private async checkAndRecord(view: DomainView, claim: DomainClaim): Promise<DomainRecord | undefined> {
    const { record } = view;
    const found = await this.d.check(view.domain, view.expected);
    const now = this.d.clock();
    const step = afterCheck(
      {
        phase: record.phase,
        createdAt: claim.createdAt,
        verifiedAt: claim.verifiedAt,
        phaseSince: record.phaseSince,
        backoffMs: claim.backoffMs,
      },
      { ok: found.ownership && found.routing, reason: found.reason, message: found.message },
      now,
      { recheckMs: this.d.settings.recheckMs },
    );
    const changed = step.phase !== record.phase;
    const verified = record.status?.conditions?.find((c) => c.type === 'Verified');
    const status: StatusPatch = {
      phase: step.phase,
      reason: step.reason,
      message: step.message,
      checkedAt: now.toISOString(),
      verifiedAt: step.verifiedAt?.toISOString() ?? null,
      nextCheckAt: step.release ? null : step.nextCheckAt.toISOString(),
      records: found.records.map((r) => ({
        purpose: r.purpose,
        type: r.type,
        name: r.name,
        expected: [r.value],
        observed: r.observed,
        ok: r.ok,
      })),
      conditions: [
        {
          type: 'Verified',
          status: step.phase === 'Verified' ? 'True' : 'False',
          reason: step.reason,
          message: step.message.slice(0, 32_000),
          lastTransitionTime: changed || !verified ? now.toISOString() : verified.lastTransitionTime,
        },
      ],
    };
    const written = await this.d.domains.writeStatus(record.namespace, record.name, status);
    if (step.release) await this.d.claims.release(record.name, claim.accountId);
    else await this.d.claims.schedule(record.name, step);
    if (step.event)
      await this.d.events.record(claim.accountId, step.event, record.app, { domain: record.name, app: record.app, reason: step.message });
    return written;
  }
}
