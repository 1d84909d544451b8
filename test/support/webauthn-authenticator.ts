// A software passkey authenticator for tests, standing in for a browser and its authenticator:
// ES256 keys from node:crypto, 'none' attestation, discoverable credentials, a signature counter.
// It does exactly what the bytes of WebAuthn Level 3 say (authenticator data, COSE key, client
// data, signature over authData || SHA-256(clientDataJSON)), and lets a test misbehave on purpose:
// sign for another RP ID, claim another origin, roll a counter back, or be cloned.
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

type Cbor = Parameters<typeof isoCBOR.encode>[0];

const flags = { userPresent: 0x01, userVerified: 0x04, attestedCredentialData: 0x40 } as const;
const es256 = -7;

interface Credential {
  id: Buffer;
  rpId: string;
  /** The user handle the relying party chose (base64url), returned with every assertion. */
  userHandle: string;
  privateKey: KeyObject;
  signCount: number;
}

export interface AuthenticatorOptions {
  /** Whether it verifies the user (PIN, biometrics): the UV flag. Default true. */
  userVerification?: boolean;
  /** Whether it keeps a signature counter; without one it always reports 0, as synced passkeys do. Default true. */
  counter?: boolean;
}

/** A test's deliberate deviations from what a browser would send. */
export interface Tamper {
  /** Sign for this RP ID instead of the one in the options. */
  rpId?: string;
  /** get: answer with this credential even if the options or RP ID do not call for it.
   *  create: present this existing credential again, ignoring the exclude list. */
  credentialId?: string;
  /** get: return this user handle (base64url) instead of the one the credential was made for. */
  userHandle?: string;
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest();
const b64url = (data: Uint8Array) => Buffer.from(data).toString('base64url');

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

export class SoftwareAuthenticator {
  private readonly credentials = new Map<string, Credential>();

  constructor(private readonly opts: AuthenticatorOptions = {}) {}

  /** What navigator.credentials.create() resolves to, as PublicKeyCredential.toJSON(). */
  create(options: PublicKeyCredentialCreationOptionsJSON, origin: string, tamper: Tamper = {}): RegistrationResponseJSON {
    const rpId = tamper.rpId ?? options.rp.id ?? new URL(origin).hostname;
    if (!options.pubKeyCredParams.some((p) => p.alg === es256)) throw new Error('NotSupportedError: ES256 not offered');
    const again = tamper.credentialId === undefined ? undefined : this.credentials.get(tamper.credentialId);
    if (tamper.credentialId !== undefined && !again) throw new Error(`no credential ${tamper.credentialId}`);
    for (const excluded of again ? [] : (options.excludeCredentials ?? [])) {
      if (this.credentials.get(excluded.id)?.rpId === rpId)
        throw new Error('InvalidStateError: this authenticator already holds a credential of the exclude list');
    }
    const privateKey = again?.privateKey ?? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
    const coseKey = new Map<string | number, Cbor>([
      [1, 2], // kty: EC2
      [3, es256], // alg
      [-1, 1], // crv: P-256
      [-2, Buffer.from(jwk.x!, 'base64url')],
      [-3, Buffer.from(jwk.y!, 'base64url')],
    ]);
    const id = again?.id ?? randomBytes(16);
    const credential: Credential = again ?? { id, rpId, userHandle: options.user.id, privateKey, signCount: 0 };
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.of(this.flags() | flags.attestedCredentialData),
      uint32(credential.signCount),
      Buffer.alloc(16), // AAGUID: all zero, as with 'none' attestation
      idLength,
      id,
      isoCBOR.encode(coseKey),
    ]);
    const clientDataJSON = JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin, crossOrigin: false });
    const attestationObject = isoCBOR.encode(
      new Map<string | number, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    this.credentials.set(b64url(id), credential);
    return {
      id: b64url(id),
      rawId: b64url(id),
      type: 'public-key',
      response: {
        clientDataJSON: b64url(Buffer.from(clientDataJSON)),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  /** What navigator.credentials.get() resolves to, as PublicKeyCredential.toJSON(). Counts one use. */
  get(options: PublicKeyCredentialRequestOptionsJSON, origin: string, tamper: Tamper = {}): AuthenticationResponseJSON {
    const rpId = tamper.rpId ?? options.rpId ?? new URL(origin).hostname;
    const credential = this.pick(rpId, options, tamper.credentialId);
    if (this.opts.counter !== false) credential.signCount += 1;
    const authData = Buffer.concat([sha256(rpId), Buffer.of(this.flags()), uint32(this.opts.counter === false ? 0 : credential.signCount)]);
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin, crossOrigin: false }));
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey); // DER for EC keys
    return {
      id: b64url(credential.id),
      rawId: b64url(credential.id),
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: tamper.userHandle ?? credential.userHandle,
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  /** Sets a credential's counter, e.g. back to an earlier value to act like a restored copy. */
  setCounter(credentialId: string, signCount: number): void {
    const credential = this.credentials.get(credentialId);
    if (!credential) throw new Error(`no credential ${credentialId}`);
    credential.signCount = signCount;
  }

  counter(credentialId: string): number {
    const credential = this.credentials.get(credentialId);
    if (!credential) throw new Error(`no credential ${credentialId}`);
    return credential.signCount;
  }

  /** A copy holding the same keys and counters, which from now on count separately. */
  clone(): SoftwareAuthenticator {
    const copy = new SoftwareAuthenticator(this.opts);
    for (const [id, c] of this.credentials) copy.credentials.set(id, { ...c });
    return copy;
  }

  private flags(): number {
    return flags.userPresent | (this.opts.userVerification === false ? 0 : flags.userVerified);
  }

  // Discoverable credentials: with an empty allow list the newest credential for the RP ID answers,
  // as a browser would after the person picks it.
  private pick(rpId: string, options: PublicKeyCredentialRequestOptionsJSON, credentialId: string | undefined): Credential {
    if (credentialId) {
      const chosen = this.credentials.get(credentialId);
      if (!chosen) throw new Error(`no credential ${credentialId}`);
      return chosen;
    }
    const allowed = new Set((options.allowCredentials ?? []).map((c) => c.id));
    const candidates = [...this.credentials.entries()].filter(([id, c]) => c.rpId === rpId && (allowed.size === 0 || allowed.has(id)));
    const last = candidates.at(-1);
    if (!last) throw new Error(`NotAllowedError: no credential for ${rpId}`);
    return last[1];
  }
}
