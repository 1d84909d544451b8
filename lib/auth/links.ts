// Secrets that lead to a session (table auth_links), and provider sign-ins in progress (auth_flows).
//
// - Email links: reusable while their address stays in the app's policy (invitation rule 2); a new
//   link never invalidates older ones (rule 3); removing the address revokes them (rule 5).
// - Handoffs: one use, two minutes. An owner link minted by the API, or the end of an identity
//   provider's callback on the platform's sign-in host, which hands the identity to the app's own
//   hostname. A handoff from a provider is bound to the browser that started the flow (the hash of
//   a cookie set on the app hostname), so a callback URL sent to someone else signs nobody in.
//
// Both travel in the URL fragment of the app's sign-in page and are redeemed by a same-origin POST.
import type { Knex } from 'knex';
import type { Identity } from './identity.js';
import { hashSecret, newSecret } from './secrets.js';

export const handoffLifetimeMs = 2 * 60_000;
export const ownerLinkLifetimeMs = 5 * 60_000;
export const flowLifetimeMs = 10 * 60_000;

export type Redeemed = { kind: 'email'; email: string; next: string | null } | { kind: 'handoff'; identity: Identity; next: string | null };

interface LinkRow {
  id: string;
  app_uid: string;
  kind: 'email' | 'handoff';
  email: string | null;
  identity: Identity | null;
  binding: string | null;
  next: string | null;
  created_at: Date;
  expires_at: Date | null;
  used_at: Date | null;
  revoked_at: Date | null;
}

export interface Flow {
  id: string;
  appUid: string;
  host: string;
  provider: string;
  secrets: Record<string, string>;
  /** Hash of the flow cookie set on the app hostname when the flow started. */
  binding: string;
  next: string;
}

export class LinkStore {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** A new reusable sign-in link for an address; returns the secret for the URL fragment. */
  async emailLink(appUid: string, email: string, next: string | null, trx: Knex = this.db): Promise<string> {
    const token = newSecret();
    await trx('auth_links').insert({
      id: hashSecret(token),
      app_uid: appUid,
      kind: 'email',
      email: email.toLowerCase(),
      next,
      created_at: this.clock(),
    });
    return token;
  }

  /** A one-time handoff of an identity to the app's hostname. `binding` ties it to one browser. */
  async handoff(appUid: string, identity: Identity, opts: { next: string | null; binding?: string; lifetimeMs?: number }): Promise<string> {
    const token = newSecret();
    const now = this.clock();
    await this.db('auth_links').insert({
      id: hashSecret(token),
      app_uid: appUid,
      kind: 'handoff',
      identity: JSON.stringify(identity),
      binding: opts.binding ?? null,
      next: opts.next,
      created_at: now,
      expires_at: new Date(now.getTime() + (opts.lifetimeMs ?? handoffLifetimeMs)),
    });
    return token;
  }

  /**
   * What a secret from a sign-in page's fragment stands for, on this app; a handoff is used up.
   * `binding` is the hash of the browser's flow cookie, if it has one.
   */
  async redeem(token: string, appUid: string, binding: string | undefined): Promise<Redeemed | undefined> {
    const id = hashSecret(token);
    const now = this.clock();
    return this.db.transaction(async (trx) => {
      const row = (await trx('auth_links').where({ id }).forUpdate().first()) as LinkRow | undefined;
      if (!row || row.app_uid !== appUid || row.revoked_at) return undefined;
      if (row.kind === 'email') return { kind: 'email' as const, email: row.email!, next: row.next };
      if (row.used_at || (row.expires_at && row.expires_at <= now)) return undefined;
      if (row.binding && row.binding !== binding) return undefined;
      await trx('auth_links').where({ id }).update({ used_at: now });
      return { kind: 'handoff' as const, identity: row.identity!, next: row.next };
    });
  }

  /** Revokes every email link of an address on an app (it left the policy). */
  async revokeEmail(appUid: string, email: string, trx: Knex = this.db): Promise<number> {
    return trx('auth_links')
      .where({ app_uid: appUid, kind: 'email', email: email.toLowerCase() })
      .whereNull('revoked_at')
      .update({ revoked_at: this.clock() });
  }

  /** Records a provider sign-in under `state`, the provider's state parameter (a fresh secret). */
  async startFlow(state: string, flow: Omit<Flow, 'id'>): Promise<void> {
    await this.db('auth_flows').insert({
      id: hashSecret(state),
      app_uid: flow.appUid,
      host: flow.host,
      provider: flow.provider,
      secrets: JSON.stringify(flow.secrets),
      binding: flow.binding,
      next: flow.next,
      expires_at: new Date(this.clock().getTime() + flowLifetimeMs),
    });
    // Stale flows are few and small; clearing them here keeps the table bounded without a timer.
    await this.db('auth_flows').where('expires_at', '<', this.clock()).delete();
  }

  /** The flow a provider's callback `state` belongs to; used up by reading it. */
  async finishFlow(state: string, provider: string): Promise<Flow | undefined> {
    const [row] = (await this.db('auth_flows')
      .where({ id: hashSecret(state), provider })
      .where('expires_at', '>', this.clock())
      .delete()
      .returning('*')) as Array<{
      id: string;
      app_uid: string;
      host: string;
      provider: string;
      secrets: Record<string, string>;
      binding: string;
      next: string;
    }>;
    return (
      row && {
        id: row.id,
        appUid: row.app_uid,
        host: row.host,
        provider: row.provider,
        secrets: row.secrets,
        binding: row.binding,
        next: row.next,
      }
    );
  }
}
