// Passkeys of app users (tables passkey_credentials, passkey_challenges). Each app hostname is its
// own WebAuthn relying party: the RP ID is the exact hostname and the expected origin the app's
// origin, so a passkey made on one app is useless on every other (the authenticator signs the RP
// ID's hash, and credentials are also looked up per app). Registration needs a signed-in app user;
// sign-in uses discoverable credentials, so the browser offers the passkeys it holds for the
// hostname and the credential id names the app user.
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

/** One app hostname as a relying party, and the app it belongs to. */
export interface RelyingParty {
  appUid: string;
  rpId: string;
}

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

/** The WebAuthn user handle of an app user: its id, which carries no personal data. */
const userHandleOf = (appUserId: string) => Buffer.from(appUserId, 'utf8');

interface ChallengeRow {
  id: string;
  app_uid: string;
  app_user_id: string | null;
  rp_id: string;
  challenge: string;
  purpose: 'register' | 'authenticate';
  expires_at: Date;
}

interface CredentialRow {
  id: string;
  app_uid: string;
  app_user_id: string;
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
  ) {}

  /** Options for navigator.credentials.create(), for a signed-in app user adding a passkey. */
  async registrationOptions(
    opts: RelyingParty & { rpName: string; user: { id: string; email: string } },
  ): Promise<{ challengeId: string; options: PublicKeyCredentialCreationOptionsJSON }> {
    const existing = await this.credentials(opts.appUid, opts.user.id).where({ rp_id: opts.rpId });
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

  /** Checks a new passkey of `userId` and stores it; returns its credential id. */
  async verifyRegistration(
    opts: RelyingParty & { challengeId: string; userId: string; origin: string; response: unknown },
  ): Promise<string> {
    assertSameHost(opts.origin, opts.rpId);
    const response: RegistrationResponseJSON = {
      ...parse(registrationShape, opts.response),
      clientExtensionResults: {},
      authenticatorAttachment: undefined,
    };
    const challenge = await this.redeem(opts, opts.challengeId, 'register');
    if (challenge.app_user_id !== opts.userId) throw new PasskeyError('challenge', 'the challenge was issued to another user');
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
    const inserted = await this.db('passkey_credentials')
      .insert({
        id: credential.id,
        app_uid: opts.appUid,
        app_user_id: opts.userId,
        rp_id: opts.rpId,
        public_key: Buffer.from(credential.publicKey),
        counter: credential.counter,
        transports: JSON.stringify(response.response.transports ?? []),
        created_at: this.clock(),
      })
      .onConflict('id')
      .ignore()
      .returning('id');
    if (inserted.length === 0) throw new PasskeyError('exists', 'this passkey is already registered');
    return credential.id;
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

  /** Checks a passkey sign-in; returns the app user it belongs to and advances its counter. */
  async verifyAuthentication(
    opts: RelyingParty & { challengeId: string; origin: string; response: unknown },
  ): Promise<{ appUserId: string; credentialId: string }> {
    assertSameHost(opts.origin, opts.rpId);
    const parsed = parse(authenticationShape, opts.response);
    const response: AuthenticationResponseJSON = {
      ...parsed,
      response: { ...parsed.response, userHandle: parsed.response.userHandle ?? undefined },
      clientExtensionResults: {},
      authenticatorAttachment: undefined,
    };
    const challenge = await this.redeem(opts, opts.challengeId, 'authenticate');
    const row = await this.db('passkey_credentials as c')
      .join('app_users as u', 'u.id', 'c.app_user_id')
      .where({ 'c.id': response.id, 'c.app_uid': opts.appUid, 'c.rp_id': opts.rpId })
      .first<(CredentialRow & { disabled_at: Date | null }) | undefined>('c.*', 'u.disabled_at');
    if (!row) throw new PasskeyError('unknown-credential', 'no such passkey on this app');
    if (
      response.response.userHandle !== undefined &&
      response.response.userHandle !== userHandleOf(row.app_user_id).toString('base64url')
    ) {
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
    if (row.disabled_at) throw new PasskeyError('disabled', 'the app user is disabled');
    // Authenticators without a counter always say 0; one that has counted must keep counting up.
    const next = verified.authenticationInfo.newCounter;
    const advanced = await this.db('passkey_credentials')
      .where({ id: row.id })
      .andWhere((w) => {
        if (next === 0) w.where('counter', 0);
        else w.where('counter', '<', next);
      })
      .update({ counter: next, last_used_at: this.clock() });
    if (advanced === 0) throw new PasskeyError('cloned', `the passkey's signature counter went from ${row.counter} to ${next}`);
    return { appUserId: row.app_user_id, credentialId: row.id };
  }

  /** The passkeys of one app user, oldest first. */
  async list(appUid: string, userId: string): Promise<Passkey[]> {
    const rows = await this.credentials(appUid, userId);
    return rows.map(toPasskey);
  }

  /** Removes every passkey and pending registration of an app user; returns how many passkeys went. */
  async deleteForUser(appUid: string, userId: string): Promise<number> {
    return this.db.transaction(async (trx): Promise<number> => {
      await trx('passkey_challenges').where({ app_uid: appUid, app_user_id: userId }).del();
      return trx('passkey_credentials').where({ app_uid: appUid, app_user_id: userId }).del();
    });
  }

  private credentials(appUid: string, userId: string): Knex.QueryBuilder<CredentialRow, CredentialRow[]> {
    return this.db<CredentialRow>('passkey_credentials')
      .where({ app_uid: appUid, app_user_id: userId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  private async issue(party: RelyingParty, purpose: ChallengeRow['purpose'], challenge: string, appUserId: string | null): Promise<string> {
    const now = this.clock();
    await this.db('passkey_challenges').where('expires_at', '<=', now).del();
    const id = randomBytes(16).toString('base64url');
    await this.db('passkey_challenges').insert({
      id,
      app_uid: party.appUid,
      app_user_id: appUserId,
      rp_id: party.rpId,
      challenge,
      purpose,
      expires_at: new Date(now.getTime() + challengeLifetimeMs),
    });
    return id;
  }

  /** Deletes and returns a challenge of this app, hostname and purpose, if it has not expired. */
  private async redeem(party: RelyingParty, challengeId: string, purpose: ChallengeRow['purpose']): Promise<ChallengeRow> {
    const [row] = (await this.db('passkey_challenges')
      .where({ id: challengeId, app_uid: party.appUid, purpose })
      .del()
      .returning('*')) as ChallengeRow[];
    if (!row) throw new PasskeyError('challenge', 'unknown or used challenge');
    if (row.expires_at.getTime() <= this.clock().getTime()) throw new PasskeyError('challenge', 'the challenge expired');
    if (row.rp_id !== party.rpId) throw new PasskeyError('challenge', 'the challenge was issued on another hostname');
    return row;
  }
}

/** The RP ID is the app's exact hostname; an origin elsewhere is a caller's mistake, not a browser's. */
function assertSameHost(origin: string, rpId: string): void {
  if (new URL(origin).hostname !== rpId) throw new Error(`passkeys: origin ${origin} is not on ${rpId}`);
}
