import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { calculateJwkThumbprint, decodeProtectedHeader, type JSONWebKeySet, type JWK } from 'jose';
import { startIngress } from '../../ingress-auth/server.js';
import { loadConfig } from '../../lib/config.js';
import {
  audienceOf,
  AssertionInvalid,
  AssertionSigner,
  signAssertion,
  verifyAssertion,
  type SigningKey,
} from '../../lib/identity/assertion.js';
import { createLogger } from '../../lib/logger.js';

async function newKey(): Promise<{ key: SigningKey; jwk: JWK }> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = (publicKey.export({ format: 'jwk' }) as JWK).x!;
  const kid = await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x });
  return { key: { kid, privateKey }, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' } };
}

const issuer = 'http://apps.localhost:8081/_svc/auth';
const identity = { sub: 'usr_1', email: 'ada@example.test', provider: 'email', name: 'Ada' };
const t0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

/** Flips one bit of the base64url segment `part` (0 header, 1 payload, 2 signature) at `index`. */
function flip(token: string, part: number, index: number): string {
  const parts = token.split('.');
  const bytes = Buffer.from(parts[part]!, 'base64url');
  bytes[index] = bytes[index]! ^ 0x01;
  parts[part] = bytes.toString('base64url');
  return parts.join('.');
}

async function rejected(promise: Promise<unknown>, code: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => err instanceof AssertionInvalid && code.test(err.code));
}

describe('identity assertions (Ed25519 JWS)', () => {
  it('sign with header {alg EdDSA, kid, typ JWT} and verify with the JWKS, claims intact', async () => {
    const { key, jwk } = await newKey();
    const jwks: JSONWebKeySet = { keys: [jwk] };
    const token = await signAssertion(key, identity, 'Myapp.apps.localhost:8081', { issuer, now: t0 });
    assert.deepEqual(decodeProtectedHeader(token), { alg: 'EdDSA', kid: key.kid, typ: 'JWT' });
    const claims = await verifyAssertion(token, jwks, { audience: 'myapp.apps.localhost', issuer, now: at(60_000) });
    assert.deepEqual(claims, {
      iss: issuer,
      aud: 'myapp.apps.localhost',
      sub: 'usr_1',
      email: 'ada@example.test',
      provider: 'email',
      name: 'Ada',
      iat: t0.getTime() / 1000,
      exp: t0.getTime() / 1000 + 300,
    });
    // A Host header with a port is the same audience.
    await verifyAssertion(token, jwks, { audience: 'myapp.apps.localhost:8081', issuer, now: t0 });
  });

  it('fail once tampered: payload, header kid, signature', async () => {
    const { key, jwk } = await newKey();
    const other = await newKey();
    const jwks: JSONWebKeySet = { keys: [jwk, other.jwk] };
    const opts = { audience: 'myapp.apps.localhost', issuer, now: t0 };
    const token = await signAssertion(key, identity, 'myapp.apps.localhost', { issuer, now: t0 });
    await verifyAssertion(token, jwks, opts);
    // A byte of the payload flipped, anywhere.
    const payloadLength = Buffer.from(token.split('.')[1]!, 'base64url').length;
    for (const i of [0, 10, Math.floor(payloadLength / 2), payloadLength - 1]) {
      await rejected(
        verifyAssertion(flip(token, 1, i), jwks, opts),
        /ERR_JWS_SIGNATURE_VERIFICATION_FAILED|ERR_JWT_INVALID|ERR_JWS_INVALID/,
      );
    }
    // The email changed to someone else's, re-encoded cleanly.
    const [h, p, s] = token.split('.') as [string, string, string];
    const forged = { ...(JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>), email: 'eve@example.test' };
    await rejected(
      verifyAssertion(`${h}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${s}`, jwks, opts),
      /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/,
    );
    // The header's kid pointing at another published key, or at no key.
    for (const kid of [other.key.kid, 'nope']) {
      const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid, typ: 'JWT' })).toString('base64url');
      await rejected(verifyAssertion(`${header}.${p}.${s}`, jwks, opts), /ERR_JWS_SIGNATURE_VERIFICATION_FAILED|ERR_JWKS_NO_MATCHING_KEY/);
    }
    // alg none, or an HMAC alg, are refused whatever the signature.
    for (const alg of ['none', 'HS256']) {
      const header = Buffer.from(JSON.stringify({ alg, kid: key.kid, typ: 'JWT' })).toString('base64url');
      await rejected(verifyAssertion(`${header}.${p}.${s}`, jwks, opts), /ERR_JOSE_ALG_NOT_ALLOWED|ERR_JWS_INVALID/);
    }
    // The signature changed: one bit, or the signature of another token.
    await rejected(verifyAssertion(flip(token, 2, 5), jwks, opts), /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/);
    const another = await signAssertion(key, { ...identity, sub: 'usr_2' }, 'myapp.apps.localhost', { issuer, now: t0 });
    await rejected(verifyAssertion(`${h}.${p}.${another.split('.')[2]}`, jwks, opts), /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/);
    // Signed by a key that is not published.
    const stranger = await newKey();
    const strangers = await signAssertion({ kid: key.kid, privateKey: stranger.key.privateKey }, identity, 'myapp.apps.localhost', {
      issuer,
      now: t0,
    });
    await rejected(verifyAssertion(strangers, jwks, opts), /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/);
  });

  it('fail for another audience or issuer', async () => {
    const { key, jwk } = await newKey();
    const token = await signAssertion(key, identity, 'myapp.apps.localhost', { issuer, now: t0 });
    await rejected(
      verifyAssertion(token, { keys: [jwk] }, { audience: 'other.apps.localhost', issuer, now: t0 }),
      /ERR_JWT_CLAIM_VALIDATION_FAILED/,
    );
    await rejected(
      verifyAssertion(token, { keys: [jwk] }, { audience: 'myapp.apps.localhost', issuer: 'https://evil.test/_svc/auth', now: t0 }),
      /ERR_JWT_CLAIM_VALIDATION_FAILED/,
    );
  });

  it('made out to a custom domain and its app hostname: either name verifies it, no third one', async () => {
    const { key, jwk } = await newKey();
    const token = await signAssertion(key, identity, ['WWW.Shop.example:8443', 'myapp.apps.localhost'], { issuer, now: t0 });
    const jwks = { keys: [jwk] };
    const onDomain = await verifyAssertion(token, jwks, { audience: 'www.shop.example', issuer, now: t0 });
    assert.deepEqual(onDomain.aud, ['www.shop.example', 'myapp.apps.localhost']);
    // The platform runtime checks its app hostname (SVC_AUTH_AUDIENCE): a visitor on a custom domain is known there.
    await verifyAssertion(token, jwks, { audience: ['myapp.apps.localhost'], issuer, now: t0 });
    await rejected(verifyAssertion(token, jwks, { audience: 'other.apps.localhost', issuer, now: t0 }), /ERR_JWT_CLAIM_VALIDATION_FAILED/);
    // One name twice is one audience, a string as before.
    const single = await signAssertion(key, identity, ['myapp.apps.localhost', 'MYAPP.apps.localhost:8081'], { issuer, now: t0 });
    assert.equal((await verifyAssertion(single, jwks, { audience: 'myapp.apps.localhost', issuer, now: t0 })).aud, 'myapp.apps.localhost');
  });

  it('expire after the lifetime (an injected clock), with the tolerance only', async () => {
    const { key, jwk } = await newKey();
    const signer = new AssertionSigner({ signingKey: async () => key }, { issuer, lifetimeSeconds: 300, clock: () => t0 });
    const token = await signer.sign(identity, 'myapp.apps.localhost');
    const opts = { audience: 'myapp.apps.localhost', issuer, clockToleranceSeconds: 0 };
    await verifyAssertion(token, { keys: [jwk] }, { ...opts, now: at(299_000) });
    await rejected(verifyAssertion(token, { keys: [jwk] }, { ...opts, now: at(300_000) }), /ERR_JWT_EXPIRED/);
    await rejected(verifyAssertion(token, { keys: [jwk] }, { ...opts, now: at(3_600_000) }), /ERR_JWT_EXPIRED/);
    // Issued in the future (a clock far ahead): refused.
    await rejected(verifyAssertion(token, { keys: [jwk] }, { ...opts, now: at(-120_000) }), /ERR_JWT_CLAIM_VALIDATION_FAILED/);
  });

  it('audienceOf: the hostname, lowercased, without port', () => {
    assert.equal(audienceOf('MyApp.Apps.Localhost:8081'), 'myapp.apps.localhost');
    assert.equal(audienceOf('myapp.example.com.'), 'myapp.example.com');
    assert.equal(audienceOf('[::1]:8081'), '[::1]');
  });

  it('config: issuer defaults to the apps domain, the JWKS to the API as machines reach it, lifetime and rotation are bounded', () => {
    const c = loadConfig({}, { exists: () => false });
    assert.deepEqual(c.assertion, {
      issuer: 'http://apps.localhost:8081/_svc/auth',
      jwksUrl: 'http://10.244.0.1:8079/_svc/auth/jwks.json',
      lifetimeSeconds: 300,
      rotationMs: 7 * 24 * 3600_000,
    });
    assert.equal(
      loadConfig({ SVC_ARTIFACT_URL: 'http://api.svc:9000/artifacts' }, { exists: () => false }).assertion.jwksUrl,
      'http://api.svc:9000/_svc/auth/jwks.json',
    );
    assert.equal(
      loadConfig({ SVC_ASSERTION_ISSUER: 'https://apps.example.com/_svc/auth/' }, { exists: () => false }).assertion.issuer,
      'https://apps.example.com/_svc/auth',
    );
    assert.throws(() => loadConfig({ SVC_ASSERTION_LIFETIME_SECONDS: '3600' }, { exists: () => false }), /SVC_ASSERTION_LIFETIME_SECONDS/);
    assert.throws(() => loadConfig({ SVC_ASSERTION_ROTATION_HOURS: '0' }, { exists: () => false }), /SVC_ASSERTION_ROTATION_HOURS/);
  });

  it('ingress-auth serves the JWKS at /_svc/auth/jwks.json', async () => {
    const { jwk } = await newKey();
    const routes = {
      start: async () => {},
      stop: async () => {},
      app: () => undefined,
      backends: () => [],
      whenBackends: async () => [],
      origins: () => new Set<string>(),
    };
    const ingress = await startIngress({
      config: loadConfig({}, { exists: () => false }),
      kc: new k8s.KubeConfig(),
      log: createLogger('test', 'silent'),
      routes,
      jwks: async () => ({ keys: [jwk] }),
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const res = await fetch(`${ingress.url}/_svc/auth/jwks.json`, { headers: { host: 'myapp.apps.localhost' } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/jwk-set+json');
      assert.deepEqual(await res.json(), { keys: [jwk] });
      assert.equal((await fetch(`${ingress.url}/_svc/auth/jwks.json`, { method: 'POST' })).status, 404);
    } finally {
      await ingress.close();
    }
  });
});
