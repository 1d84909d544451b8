// Who a signed-in visitor is, and whether an app's policy admits them. One function decides
// admission for every provider, so the policy table of the spec has one implementation:
//   appUsers  an active app user (an app-user session: disabling a user revokes its sessions)
//   emails    the exact verified address, whatever the provider (rule 3)
//   owner     the account that owns the app (provider `svc`)
//   idp       any identity of the OpenID provider, an exact verified address, or the signed `hd` claim
//   codehost  any identity of the code host, the exact login, or verified active org membership
import type { Admit } from '../policy/index.js';

export const providers = ['passkey', 'email', 'svc', 'idp', 'codehost'] as const;
export type Provider = (typeof providers)[number];

/** App-user sessions (email links, passkeys) last longer than workforce ones (idp, codehost, owner). */
export type SessionKind = 'app' | 'workforce';

export function sessionKindOf(provider: Provider): SessionKind {
  return provider === 'email' || provider === 'passkey' ? 'app' : 'workforce';
}

/** What `/_svc/auth/me` (and a sign-in's answer) says of a signed-in identity. */
export interface UserRecord {
  id: string;
  name: string;
  email: string;
  /** Whether `email` is an address the provider verified; false for the `.invalid` stand-in. */
  email_verified: boolean;
  provider: Provider;
}

/**
 * Every field a string, whatever the provider gave (docs/decisions/0010-sign-in.md): `name` falls
 * back to the code-host login, then the email, then the id; `email`, when no verified address came,
 * to `<login or id>@<provider>.invalid`, which RFC 2606 guarantees never delivers (and
 * `email_verified` says so). The identity headers keep sending an empty email in that case.
 */
export function userRecord(id: Identity): UserRecord {
  const local =
    (id.facts?.login ?? id.subject)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '') || 'user';
  return {
    id: id.subject,
    name: id.name?.trim() || id.facts?.login || id.email || id.subject,
    email: id.email || `${local}@${id.provider}.invalid`,
    email_verified: id.email !== '',
    provider: id.provider,
  };
}

/** What a provider established about a person; stored with the session. */
export interface Identity {
  provider: Provider;
  /** Stable per provider: `au_...` for app users, the account id for `svc`, `idp:<sub>`, `codehost:<id>`. */
  subject: string;
  /** Verified address ('' when the provider gave none that is verified). */
  email: string;
  name?: string | undefined;
  /** Set when this sign-in is an app user's (email link, passkey, or a provider address on the `emails` list). */
  appUserId?: string | undefined;
  facts?: IdentityFacts | undefined;
}

export interface IdentityFacts {
  /** idp: the signed hosted-domain claim. */
  hd?: string;
  /** codehost: the login, and the organizations whose active membership was verified at sign-in. */
  login?: string;
  orgs?: string[];
  /** svc: the namespace of the signed-in account (an app is owned by the account of its namespace). */
  namespace?: string;
}

export interface AdmissionContext {
  /** The namespace of the app being visited. */
  namespace: string;
}

const isMailbox = (v: string) => v.includes('@') && !v.startsWith('@');

/** Whether `admit` (one rule's admitted identities) admits `who` on an app of `ctx`. */
export function admits(admit: Admit, who: Identity, ctx: AdmissionContext): boolean {
  const email = who.email.toLowerCase();
  const facts = who.facts ?? {};
  if (admit.appUsers && who.appUserId) return true;
  if (email && admit.emails?.includes(email)) return true;
  if (admit.owner && who.provider === 'svc' && facts.namespace === ctx.namespace) return true;
  if (admit.idp && who.provider === 'idp') {
    if (admit.idp.any) return true;
    for (const v of admit.idp.values ?? []) {
      if (isMailbox(v) ? email === v : facts.hd !== undefined && facts.hd.toLowerCase() === v.replace(/^@/, '')) return true;
    }
  }
  if (admit.codehost && who.provider === 'codehost') {
    if (admit.codehost.any) return true;
    const login = facts.login?.toLowerCase();
    const orgs = new Set((facts.orgs ?? []).map((o) => o.toLowerCase()));
    for (const v of admit.codehost.values ?? []) if (v === login || orgs.has(v)) return true;
  }
  return false;
}

/** Every admit of a decision must admit (a hand-written App may gate one path by rules that differ). */
export function admitsAll(admitList: readonly Admit[], who: Identity, ctx: AdmissionContext): boolean {
  return admitList.length > 0 && admitList.every((a) => admits(a, who, ctx));
}

/** Addresses an app's policy lists under `emails`, in any rule. */
export function policyEmails(policy: { rules: ReadonlyArray<{ admit: Admit }> } | undefined): Set<string> {
  const out = new Set<string>();
  for (const r of policy?.rules ?? []) for (const e of r.admit.emails ?? []) out.add(e);
  return out;
}

/** Whether a policy admits app users at all (`required`, or `emails`): then email links and passkeys are offered. */
export function admitsAppUsers(policy: { rules: ReadonlyArray<{ admit: Admit }> } | undefined): boolean {
  return (policy?.rules ?? []).some((r) => r.admit.appUsers || (r.admit.emails?.length ?? 0) > 0);
}

/**
 * Whether a verified address makes this visitor an app user of the app (rule 3): it is on the
 * `emails` list, or the policy admits any app user (`required`: anyone with a verified address
 * may become one; the owner can disable users).
 */
export function becomesAppUser(policy: { rules: ReadonlyArray<{ admit: Admit }> } | undefined, email: string): boolean {
  if (!email) return false;
  return (policy?.rules ?? []).some((r) => r.admit.appUsers || (r.admit.emails ?? []).includes(email.toLowerCase()));
}
