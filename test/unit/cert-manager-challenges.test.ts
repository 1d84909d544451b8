// ingress-auth's HTTP-01 answers from cert-manager's Challenges (ingress-auth/tls/challenges.ts): an
// HTTP-01 Challenge is read into the same index as the ACME issuer's ConfigMaps, answered on its
// dnsName only, only with a token of the ACME shape and its key authorization, and only while the
// gate (a verified Domain routes the name) says so; a DNS-01 or wildcard one is never served.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ChallengeIndex,
  challengeOfCertManager,
  challengeOfConfigMap,
  type CertManagerChallenge,
} from '../../ingress-auth/tls/challenges.js';
import { challengeLabel } from '../../lib/certificates/contract.js';

const token = 'tok_'.padEnd(43, 'x');
const key = `${token}.${'t'.repeat(43)}`;
const challenge = (spec: Partial<NonNullable<CertManagerChallenge['spec']>> = {}): CertManagerChallenge => ({
  metadata: { namespace: 'svc-certificates', name: 'tls-abc-1-2' },
  spec: { type: 'HTTP-01', dnsName: 'shop.example', token, key, wildcard: false, ...spec },
});

describe('cert-manager Challenges: parsing', () => {
  it('reads an HTTP-01 Challenge: its name normalized, its token and key', () => {
    assert.deepEqual(challengeOfCertManager(challenge({ dnsName: 'Shop.Example.' })), {
      domain: 'shop.example',
      token,
      keyAuthorization: key,
    });
  });

  it('serves no DNS-01 or wildcard Challenge, and none without what it needs', () => {
    assert.equal(challengeOfCertManager(challenge({ type: 'DNS-01' })), undefined);
    assert.equal(challengeOfCertManager(challenge({ wildcard: true })), undefined);
    assert.equal(challengeOfCertManager({ metadata: {} }), undefined);
    assert.equal(challengeOfCertManager(challenge({ dnsName: '' })), undefined);
    assert.equal(challengeOfCertManager(challenge({ dnsName: '[::1]' })), undefined);
  });

  it('serves only a token of the ACME shape and its key authorization, nothing else written there', () => {
    assert.equal(challengeOfCertManager(challenge({ token: 'short', key: 'short.thumb' })), undefined);
    assert.equal(challengeOfCertManager(challenge({ token: `${token}/..`, key: `${token}/...thumb` })), undefined);
    assert.equal(challengeOfCertManager(challenge({ key: `${'y'.repeat(43)}.thumb` })), undefined, 'another token’s');
    assert.equal(
      challengeOfCertManager(challenge({ key: `${token}.<script>alert(1)</script>` })),
      undefined,
      'a page, not a key authorization',
    );
    assert.equal(challengeOfCertManager(challenge({ key: token })), undefined);
  });

  it('reads the ACME issuer’s ConfigMaps by the same rules', () => {
    const cm = {
      metadata: { name: 'acme-http01-1', labels: { [challengeLabel]: 'http-01' } },
      data: { domain: 'shop.example', token, keyAuthorization: key },
    };
    assert.deepEqual(challengeOfConfigMap(cm), { domain: 'shop.example', token, keyAuthorization: key });
    assert.equal(challengeOfConfigMap({ ...cm, metadata: { name: 'x' } }), undefined, 'unlabelled');
    assert.equal(challengeOfConfigMap({ ...cm, data: { ...cm.data, keyAuthorization: 'hello' } }), undefined);
  });
});

describe('cert-manager Challenges: the index', () => {
  it('answers on the Challenge’s name only, while the gate says a verified Domain routes it', () => {
    const routed = new Set(['shop.example']);
    const idx = new ChallengeIndex();
    idx.set('Challenge/svc-certificates/c1', challengeOfCertManager(challenge()), (h) => routed.has(h));
    assert.equal(idx.answer('shop.example', token), key);
    assert.equal(idx.answer('SHOP.example:80', token), key);
    assert.equal(idx.answer('other.example', token), undefined, 'another host');
    routed.delete('shop.example');
    assert.equal(idx.answer('shop.example', token), undefined, 'no longer routed');
  });

  it('never answers a Challenge for a name nothing routes', () => {
    const idx = new ChallengeIndex();
    idx.set('Challenge/svc-certificates/c2', challengeOfCertManager(challenge({ dnsName: 'nobody.example' })), () => false);
    assert.equal(idx.answer('nobody.example', token), undefined);
  });

  it('keeps a ConfigMap’s and a Challenge’s of one token apart, and forgets one deleted or changed', () => {
    const idx = new ChallengeIndex();
    idx.upsert({
      metadata: { namespace: 'ns', name: 'same', labels: { [challengeLabel]: 'http-01' } },
      data: { domain: 'a.example', token, keyAuthorization: key },
    });
    idx.set('Challenge/ns/same', challengeOfCertManager(challenge({ dnsName: 'b.example' })), () => true);
    assert.equal(idx.answer('a.example', token), key);
    assert.equal(idx.answer('b.example', token), key);
    idx.set('Challenge/ns/same', challengeOfCertManager(challenge({ dnsName: 'b.example', type: 'DNS-01' })), () => true);
    assert.equal(idx.answer('b.example', token), undefined, 'changed into one not served');
    assert.equal(idx.answer('a.example', token), key);
    idx.set('Challenge/ns/same', challengeOfCertManager(challenge({ dnsName: 'b.example' })), () => true);
    idx.delete('Challenge/ns/same');
    assert.equal(idx.answer('b.example', token), undefined, 'deleted');
  });
});
