// Passkeys, of app users (tables passkey_credentials, passkey_challenges) and of account owners
// signing in to the console (account_passkeys, account_passkey_challenges): one ceremony code, two
// realms that never see each other's keys. Each app hostname is its own WebAuthn relying party: the
// RP ID is the exact hostname and the expected origin the app's origin, so a passkey made on one app
// is useless on every other (the authenticator signs the RP ID's hash, and credentials are also
// looked up per app); the console's relying party is the API's public hostname. Registration needs
// a signed-in owner (an app user, an account); sign-in uses discoverable credentials, so the browser
// offers the passkeys it holds for the hostname and the credential id names the owner.
//
// Challenges are single use: redeeming one deletes it before anything is checked, so a failed or
// replayed attempt cannot be retried against the same challenge. Expired ones are swept whenever
// new ones are issued.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  type VerifiedAuthenticationResponse,
  type VerifiedRegistrationResponse,
} from '@simplewebauthn/server';
import { z } from 'zod';

export const challengeLifetimeMs = 5 * 60_000;

/**
 * Why a passkey ceremony was refused: `malformed` (the browser's response has the wrong shape),
 * `challenge` (unknown, used, expired, or issued to another app, hostname or user), `invalid` (a
 * WebAuthn check failed: origin, RP ID, signature, user presence, user handle), `exists` (that
 * credential is already registered), `unknown-credential` (no such passkey on this app and
 * hostname), `cloned` (the signature counter did not go forward: a copied authenticator or a
 * replay), `disabled` (the app user is disabled).
 */
export type PasskeyFailure = 'malformed' | 'challenge' | 'invalid' | 'exists' | 'unknown-credential' | 'cloned' | 'disabled';

export class PasskeyError extends Error {
  override readonly name = 'PasskeyError';
  constructor(
    readonly reason: PasskeyFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface Passkey {
  /** The credential id, base64url. */
  id: string;
  /** The hostname it was registered on. */
  rpId: string;
  transports: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** One relying party: a hostname, and the scope its passkeys belong to (an app's uid; 'console'). */
export interface RelyingParty {
  scope: string;
  rpId: string;
}

/** Where a realm's passkeys live, and whose they are. */
export interface PasskeyRealm {
  credentials: string;
  challenges: string;
  /** The column of both tables naming the scope (RelyingParty.scope). */
  scopeColumn: string;
  /** The column of both tables naming the owner: an app user's id, an account's id. */
  ownerColumn: string;
  /** The owners' table and its column set when an owner is disabled (refused even with a valid passkey). */
  owners?: { table: string; disabledAt: string };
  /** What "no such passkey" says where it was looked for. */
  where: string;
}

/** App users' passkeys, one scope per app (its uid). */
export const appUserPasskeys: PasskeyRealm = {
  credentials: 'passkey_credentials',
  challenges: 'passkey_challenges',
  scopeColumn: 'app_uid',
  ownerColumn: 'app_user_id',
  owners: { table: 'app_users', disabledAt: 'disabled_at' },
  where: 'on this app',
};

/** Account owners' console passkeys: one scope, 'console'. */
export const accountPasskeys: PasskeyRealm = {
  credentials: 'account_passkeys',
  challenges: 'account_passkey_challenges',
  scopeColumn: 'scope',
  ownerColumn: 'account_id',
  where: 'for the console',
};

// Browser input. Lengths are generous bounds, not WebAuthn limits: a credential id is at most 1023
// bytes; attestation is 'none', so an attestation object is authenticator data plus a few bytes. A
// signature is at most 4627 bytes: on Node 24 @simplewebauthn offers the post-quantum ML-DSA
// algorithms (WebCrypto supports them), whose signatures are kilobytes, and Chromium picks them.
const base64url = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, 'not base64url');
const credentialId = base64url(1400);
const common = {
  id: credentialId,
  rawId: credentialId,
  type: z.literal('public-key'),
  // Browsers send null when they do not know the attachment.
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).nullish(),
  // No extensions are requested, so whatever the browser reports is checked for shape and dropped.
  clientExtensionResults: z.record(z.string(), z.unknown()).optional(),
};
const registrationShape = z
  .object({
    ...common,
    response: z.object({
      clientDataJSON: base64url(4096),
      attestationObject: base64url(65536),
      transports: z.array(z.string().min(1).max(32)).max(8).optional(),
    }),
  })
  .refine((r) => r.id === r.rawId, 'id and rawId differ');
const authenticationShape = z
  .object({
    ...common,
    response: z.object({
      clientDataJSON: base64url(4096),
      authenticatorData: base64url(16384),
      signature: base64url(8192),
      userHandle: base64url(128).nullish(),
    }),
  })
  .refine((r) => r.id === r.rawId, 'id and rawId differ');

function parse<T extends z.ZodType>(shape: T, response: unknown): z.output<T> {
  const parsed = shape.safeParse(response);
  if (!parsed.success) throw new PasskeyError('malformed', `passkey response: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The WebAuthn user handle of an owner: its id, which carries no personal data. */
const userHandleOf = (ownerId: string) => Buffer.from(ownerId, 'utf8');

/** A row as read, its scope and owner columns named as the realm names them. */
interface ChallengeRow {
  id: string;
  owner: string | null;
  rp_id: string;
  challenge: string;
  purpose: 'register' | 'authenticate';
  expires_at: Date;
}

interface CredentialRow {
  id: string;
  owner: string;
  rp_id: string;
  public_key: Buffer;
  counter: string;
  transports: string[];
  created_at: Date;
  last_used_at: Date | null;
}

const toPasskey = (r: CredentialRow): Passkey => ({
  id: r.id,
  rpId: r.rp_id,
  transports: r.transports,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export class PasskeyService {
  constructor(
    private readonly db: Knex,
    private readonly clock: () => Date = () => new Date(),
    private readonly realm: PasskeyRealm = appUserPasskeys,
  ) {}

  /** Options for navigator.credentials.create(), for a signed-in owner adding a passkey. */
  async registrationOptions(
    opts: RelyingParty & { rpName: string; user: { id: string; email: string } },
  ): Promise<{ challengeId: string; options: PublicKeyCredentialCreationOptionsJSON }> {
    const existing = await this.credentials(opts.scope, opts.user.id).where({ rp_id: opts.rpId });
    const options = await generateRegistrationOptions({
      rpName: opts.rpName,
      rpID: opts.rpId,
      userName: opts.user.email,
      userDisplayName: opts.user.email,
      userID: userHandleOf(opts.user.id),
      attestationType: 'none',
      // The browser refuses to make a second passkey on an authenticator that already holds one.
      excludeCredentials: existing.map((c) => ({ id: c.id, transports: c.transports })),
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
      timeout: challengeLifetimeMs,
    });
    const challengeId = await this.issue(opts, 'register', options.challenge, opts.user.id);
    return { challengeId, options };
  }

  /** Checks a new passkey of `userId` and stores it; returns it as stored. */
  async verifyRegistration(
    opts: RelyingParty & { challengeId: string; userId: string; origin: string; response: unknown },
  ): Promise<Passkey> {
    assertSameHost(opts.origin, opts.rpId);
    const response: RegistrationResponseJSON = {
      ...parse(registrationShape, opts.response),
      clientExtensionResults: {},
      authenticatorAttachment: undefined,
    };
    const challenge = await this.redeem(opts, opts.challengeId, 'register');
    if (challenge.owner !== opts.userId) throw new PasskeyError('challenge', 'the challenge was issued to another user');
    let verified: VerifiedRegistrationResponse;
    try {
      verified = await verifyRegistrationResponse({
        response,
        expectedChallenge: challenge.challenge,
        expectedOrigin: opts.origin,
        expectedRPID: opts.rpId,
        // Verification is preferred, not required: a security key without a PIN still counts.
        requireUserVerification: false,
      });
    } catch (err) {
      throw new PasskeyError('invalid', `passkey registration refused: ${(err as Error).message}`, { cause: err });
    }
    if (!verified.verified) throw new PasskeyError('invalid', 'passkey registration refused');
    const { credential } = verified.registrationInfo;
    const { realm } = this;
    const inserted = await this.db(realm.credentials)
      .insert({
        id: credential.id,
        [realm.scopeColumn]: opts.scope,
        [realm.ownerColumn]: opts.userId,
        rp_id: opts.rpId,
        public_key: Buffer.from(credential.publicKey),
        counter: credential.counter,
        transports: JSON.stringify(response.response.transports ?? []),
        created_at: this.clock(),
      })
      .onConflict('id')
      .ignore()
      .returning('*');
    const stored = inserted[0] as CredentialRow | undefined;
    if (!stored) throw new PasskeyError('exists', 'this passkey is already registered');
    return toPasskey(stored);
  }

  /** Options for navigator.credentials.get(): discoverable credentials, so nobody is named yet. */
  async authenticationOptions(opts: RelyingParty): Promise<{ challengeId: string; options: PublicKeyCredentialRequestOptionsJSON }> {
    const options = await generateAuthenticationOptions({
      rpID: opts.rpId,
      allowCredentials: [],
      userVerification: 'preferred',
      timeout: challengeLifetimeMs,
    });
    const challengeId = await this.issue(opts, 'authenticate', options.challenge, null);
    return { challengeId, options };
  }

  /** Checks a passkey sign-in; returns the owner it belongs to and advances its counter. */
  async verifyAuthentication(
    opts: RelyingParty & { challengeId: string; origin: string; response: unknown },
  ): Promise<{ ownerId: string; credentialId: string }> {
    assertSameHost(opts.origin, opts.rpId);
    const parsed = parse(authenticationShape, opts.response);
    const response: AuthenticationResponseJSON = {
      ...parsed,
      response: { ...parsed.response, userHandle: parsed.response.userHandle ?? undefined },
      clientExtensionResults: {},
      authenticatorAttachment: undefined,
    };
    const challenge = await this.redeem(opts, opts.challengeId, 'authenticate');
    const { realm } = this;
    const lookup = this.db(`${realm.credentials} as c`)
      .where({ 'c.id': response.id, [`c.${realm.scopeColumn}`]: opts.scope, 'c.rp_id': opts.rpId })
      .select('c.*', `c.${realm.ownerColumn} as owner`);
    if (realm.owners)
      lookup.join(`${realm.owners.table} as o`, 'o.id', `c.${realm.ownerColumn}`).select(`o.${realm.owners.disabledAt} as disabled_at`);
    const row = (await lookup.first()) as (CredentialRow & { disabled_at?: Date | null }) | undefined;
    if (!row) throw new PasskeyError('unknown-credential', `no such passkey ${realm.where}`);
    if (response.response.userHandle !== undefined && response.response.userHandle !== userHandleOf(row.owner).toString('base64url')) {
      throw new PasskeyError('invalid', 'the passkey answered for another user');
    }
    let verified: VerifiedAuthenticationResponse;
    try {
      verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge.challenge,
        expectedOrigin: opts.origin,
        expectedRPID: opts.rpId,
        // The counter is compared below, in the same statement that stores it, so two sign-ins
        // racing with one copied authenticator cannot both pass; the library's check is bypassed.
        credential: { id: row.id, publicKey: new Uint8Array(row.public_key), counter: 0, transports: row.transports },
        requireUserVerification: false,
      });
    } catch (err) {
      throw new PasskeyError('invalid', `passkey sign-in refused: ${(err as Error).message}`, { cause: err });
    }
    if (!verified.verified) throw new PasskeyError('invalid', 'passkey sign-in refused');
    if (row.disabled_at) throw new PasskeyError('disabled', 'the passkey’s owner is disabled');
    // Authenticators without a counter always say 0; one that has counted must keep counting up.
    const next = verified.authenticationInfo.newCounter;
    const advanced = await this.db(realm.credentials)
      .where({ id: row.id })
      .andWhere((w) => {
        if (next === 0) w.where('counter', 0);
        else w.where('counter', '<', next);
      })
      .update({ counter: next, last_used_at: this.clock() });
    if (advanced === 0) throw new PasskeyError('cloned', `the passkey's signature counter went from ${row.counter} to ${next}`);
    return { ownerId: row.owner, credentialId: row.id };
  }

  /** The passkeys of one owner, oldest first. */
  async list(scope: string, ownerId: string): Promise<Passkey[]> {
    const rows = await this.credentials(scope, ownerId);
    return rows.map(toPasskey);
  }

  /** Removes one passkey of an owner; whether there was one. */
  async delete(scope: string, ownerId: string, credentialId: string): Promise<boolean> {
    const { realm } = this;
    const n = await this.db(realm.credentials)
      .where({ id: credentialId, [realm.scopeColumn]: scope, [realm.ownerColumn]: ownerId })
      .del();
    return n > 0;
  }

  /** Removes every passkey and pending registration of an owner; returns how many passkeys went. */
  async deleteForUser(scope: string, ownerId: string): Promise<number> {
    const { realm } = this;
    const mine = { [realm.scopeColumn]: scope, [realm.ownerColumn]: ownerId };
    return this.db.transaction(async (trx): Promise<number> => {
      await trx(realm.challenges).where(mine).del();
      return trx(realm.credentials).where(mine).del();
    });
  }

  private credentials(scope: string, ownerId: string): Knex.QueryBuilder<CredentialRow, CredentialRow[]> {
    const { realm } = this;
    return this.db<CredentialRow>(realm.credentials)
      .where({ [realm.scopeColumn]: scope, [realm.ownerColumn]: ownerId })
      .select('*', `${realm.ownerColumn} as owner`)
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  private async issue(party: RelyingParty, purpose: ChallengeRow['purpose'], challenge: string, ownerId: string | null): Promise<string> {
    const { realm } = this;
    const now = this.clock();
    await this.db(realm.challenges).where('expires_at', '<=', now).del();
    const id = randomBytes(16).toString('base64url');
    await this.db(realm.challenges).insert({
      id,
      [realm.scopeColumn]: party.scope,
      [realm.ownerColumn]: ownerId,
      rp_id: party.rpId,
      challenge,
      purpose,
      expires_at: new Date(now.getTime() + challengeLifetimeMs),
    });
    return id;
  }

  /** Deletes and returns a challenge of this scope, hostname and purpose, if it has not expired. */
  private async redeem(party: RelyingParty, challengeId: string, purpose: ChallengeRow['purpose']): Promise<ChallengeRow> {
    const { realm } = this;
    const [row] = await this.db(realm.challenges)
      .where({ id: challengeId, [realm.scopeColumn]: party.scope, purpose })
      .del()
      .returning<ChallengeRow[]>(['*', `${realm.ownerColumn} as owner`]);
    if (!row) throw new PasskeyError('challenge', 'unknown or used challenge');
    if (row.expires_at.getTime() <= this.clock().getTime()) throw new PasskeyError('challenge', 'the challenge expired');
    if (row.rp_id !== party.rpId) throw new PasskeyError('challenge', 'the challenge was issued on another hostname');
    return row;
  }
}

/** The RP ID is the exact hostname; an origin elsewhere is a caller's mistake, not a browser's. */
function assertSameHost(origin: string, rpId: string): void {
  if (new URL(origin).hostname !== rpId) throw new Error(`passkeys: origin ${origin} is not on ${rpId}`);
}
