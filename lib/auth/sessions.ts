// Signed-in browsers of app hostnames (table app_sessions). A session belongs to one app (its uid)
// and one exact hostname: a cookie carried to another app's hostname, or replayed on a preview,
// finds nothing. Limits: app-user sessions end 30 days after sign-in or after 7 days unused;
// workforce sessions (idp, codehost, owner) after 8 hours. Revocations are announced on the
// PostgreSQL channel `svc_auth_revoked` so every ingress-auth replica drops its cached copies at once.
import type { Knex } from 'knex';
import { hashSecret, newSecret } from './secrets.js';
import { sessionKindOf, type Identity, type IdentityFacts, type Provider, type SessionKind } from './identity.js';

export const sessionLimits = {
  app: { absoluteMs: 30 * 24 * 3600_000, idleMs: 7 * 24 * 3600_000 },
  workforce: { absoluteMs: 8 * 3600_000, idleMs: undefined as number | undefined },
} as const;

/** How often a session's last use is written back (idle expiry is measured in days, not seconds). */
export const touchEveryMs = 5 * 60_000;

export const revokedChannel = 'svc_auth_revoked';

export interface Session {
  id: string;
  appUid: string;
  host: string;
  kind: SessionKind;
  identity: Identity;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

interface SessionRow {
  id: string;
  app_uid: string;
  host: string;
  kind: SessionKind;
  provider: Provider;
  subject: string;
  email: string;
  name: string | null;
  facts: IdentityFacts;
  app_user_id: string | null;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

function toSession(r: SessionRow): Session {
  return {
    id: r.id,
    appUid: r.app_uid,
    host: r.host,
    kind: r.kind,
    identity: {
      provider: r.provider,
      subject: r.subject,
      email: r.email,
      ...(r.name ? { name: r.name } : {}),
      ...(r.app_user_id ? { appUserId: r.app_user_id } : {}),
      facts: r.facts ?? {},
    },
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
    expiresAt: r.expires_at,
  };
}

export class SessionStore {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Signs `identity` in on `host` of the app; returns the cookie value (never stored). */
  async create(appUid: string, host: string, identity: Identity): Promise<{ token: string; session: Session }> {
    const token = newSecret();
    const now = this.clock();
    const kind = sessionKindOf(identity.provider);
    const row: SessionRow = {
      id: hashSecret(token),
      app_uid: appUid,
      host: host.toLowerCase(),
      kind,
      provider: identity.provider,
      subject: identity.subject,
      email: identity.email.toLowerCase(),
      name: identity.name ?? null,
      facts: identity.facts ?? {},
      app_user_id: identity.appUserId ?? null,
      created_at: now,
      last_seen_at: now,
      expires_at: new Date(now.getTime() + sessionLimits[kind].absoluteMs),
      revoked_at: null,
    };
    await this.db('app_sessions').insert({ ...row, facts: JSON.stringify(row.facts) });
    return { token, session: toSession(row) };
  }

  /**
   * The live session of a cookie value on this app and hostname, or undefined (unknown, another
   * app or host, revoked, past its absolute or idle limit, or its app user disabled).
   */
  async find(token: string, appUid: string, host: string): Promise<Session | undefined> {
    // A disabled app user's sessions are dead, whether the session names the user or only carries
    // the same verified address (a workforce identity from an identity provider or code host).
    const row = (await this.db('app_sessions as s')
      .leftJoin('app_users as u', 'u.id', 's.app_user_id')
      .leftJoin('app_users as e', (j) => j.on('e.app_uid', 's.app_uid').andOn('e.email', this.db.raw('lower(s.email)')))
      .where('s.id', hashSecret(token))
      .select('s.*', 'u.disabled_at as user_disabled_at', 'e.disabled_at as email_disabled_at')
      .first()) as (SessionRow & { user_disabled_at: Date | null; email_disabled_at: Date | null }) | undefined;
    if (!row || row.revoked_at || row.user_disabled_at || row.email_disabled_at) return undefined;
    if (row.app_uid !== appUid || row.host !== host.toLowerCase()) return undefined;
    const now = this.clock();
    if (!this.alive(row, now)) return undefined;
    if (now.getTime() - row.last_seen_at.getTime() > touchEveryMs) {
      await this.db('app_sessions').where({ id: row.id }).update({ last_seen_at: now });
      row.last_seen_at = now;
    }
    return toSession(row);
  }

  /** Whether a session found earlier is still within its limits at `now` (for cached copies). */
  alive(s: Pick<SessionRow, 'kind' | 'expires_at' | 'last_seen_at'> | Session, now = this.clock()): boolean {
    const kind = s.kind;
    const expires = 'expiresAt' in s ? s.expiresAt : s.expires_at;
    const lastSeen = 'lastSeenAt' in s ? s.lastSeenAt : s.last_seen_at;
    if (now.getTime() >= expires.getTime()) return false;
    const idle = sessionLimits[kind].idleMs;
    return idle === undefined || now.getTime() - lastSeen.getTime() < idle;
  }

  /** Signs one session out (the cookie's). */
  async revokeToken(token: string): Promise<void> {
    const [row] = await this.db('app_sessions')
      .where({ id: hashSecret(token) })
      .whereNull('revoked_at')
      .update({ revoked_at: this.clock() })
      .returning<Array<{ app_uid: string }>>('app_uid');
    if (row) await this.announce(row.app_uid);
  }

  /** Ends every session of an app, or of its users with one address, or of one app user. Returns how many. */
  async revoke(appUid: string, which: { appUserId?: string; email?: string; anyIdentity?: boolean } = {}): Promise<number> {
    let q = this.db('app_sessions').where({ app_uid: appUid }).whereNull('revoked_at');
    if (which.appUserId) q = q.where({ app_user_id: which.appUserId });
    // By address: app users' sessions only, unless `anyIdentity` (every session with that address).
    if (which.email) q = q.whereRaw('lower(email) = ?', [which.email.toLowerCase()]);
    if (which.email && !which.anyIdentity) q = q.whereNotNull('app_user_id');
    const n = await q.update({ revoked_at: this.clock() });
    await this.announce(appUid);
    return n;
  }

  /** Sessions still alive, per app (for the API's user listing). */
  async activeCount(appUid: string): Promise<Map<string, number>> {
    const now = this.clock();
    const rows = await this.db('app_sessions')
      .where({ app_uid: appUid })
      .whereNull('revoked_at')
      .where('expires_at', '>', now)
      .whereNotNull('app_user_id')
      .select<Array<Pick<SessionRow, 'app_user_id' | 'kind' | 'last_seen_at' | 'expires_at'>>>(
        'app_user_id',
        'kind',
        'last_seen_at',
        'expires_at',
      );
    const out = new Map<string, number>();
    for (const r of rows) if (this.alive(r, now)) out.set(r.app_user_id!, (out.get(r.app_user_id!) ?? 0) + 1);
    return out;
  }

  private async announce(appUid: string): Promise<void> {
    await this.db.raw('select pg_notify(?, ?)', [revokedChannel, appUid]);
  }
}
