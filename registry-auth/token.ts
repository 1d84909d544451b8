// Registry tokens: JWTs the registry (distribution 2.8, `auth: token`) accepts when they are signed
// by the key whose certificate is in its `rootcertbundle`. The certificate goes in the header
// (`x5c`), which distribution verifies against that bundle; ES256, as distribution's libtrust
// verifies it. `aud` is a single string: distribution 2.8 reads no list there.
import { X509Certificate, createPrivateKey, createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Access } from './grants.js';

export interface SignedToken {
  token: string;
  expiresIn: number;
  issuedAt: string;
}

/** The base64 DER of each certificate in a PEM bundle, in order. */
export function pemCertificates(pem: string): string[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map((m) => m[1]!.replace(/\s+/g, ''));
}

export class TokenSigner {
  private constructor(
    private readonly key: KeyObject,
    private readonly chain: string[],
    private readonly o: { issuer: string; service: string; ttlSeconds: number },
  ) {}

  /** A signer of the PKCS#8 P-256 key `keyPem`, whose certificate (first in `certPem`) must be of that key. */
  static fromPem(keyPem: string, certPem: string, o: { issuer: string; service: string; ttlSeconds: number }): TokenSigner {
    const key = createPrivateKey(keyPem);
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
      throw new Error('the registry token key must be an EC P-256 key (ES256)');
    const chain = pemCertificates(certPem);
    if (!chain.length) throw new Error('the registry token certificate file holds no certificate');
    const cert = new X509Certificate(Buffer.from(chain[0]!, 'base64'));
    // A certificate of another key would make every token one the registry refuses: say so at start.
    const ours = createPublicKey(key).export({ format: 'der', type: 'spki' });
    if (!cert.publicKey.export({ format: 'der', type: 'spki' }).equals(ours))
      throw new Error('the registry token certificate is not of the token key');
    return new TokenSigner(key, chain, o);
  }

  /** A token for `subject` carrying `access`, valid from `now` for the configured time. */
  async sign(subject: string, access: readonly Access[], now = new Date()): Promise<SignedToken> {
    const iat = Math.floor(now.getTime() / 1000);
    const token = await new SignJWT({ access })
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', x5c: this.chain })
      .setIssuer(this.o.issuer)
      .setSubject(subject)
      .setAudience(this.o.service)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(iat + this.o.ttlSeconds)
      .setJti(randomUUID())
      .sign(this.key);
    return { token, expiresIn: this.o.ttlSeconds, issuedAt: new Date(iat * 1000).toISOString() };
  }
}
