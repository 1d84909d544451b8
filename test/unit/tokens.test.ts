import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  attenuate,
  decode,
  effectiveAuthority,
  maxTokenLength,
  mint,
  parseRestriction,
  tokenId,
  TokenFormatError,
  verifySignature,
  type Restriction,
} from '../../lib/tokens/token.js';

const key = randomBytes(32);
const nonce = 'n0nce_' + randomBytes(12).toString('base64url');
const in90Days: Restriction = { kind: 'expires', at: new Date('2030-01-01T00:00:00Z') };
const root = mint(key, 'k1', nonce, [in90Days]);

function verifies(token: string, k = key): boolean {
  return verifySignature(k, decode(token)) !== undefined;
}

function payloadOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.slice(4), 'base64url').toString('utf8')) as Record<string, unknown>;
}
function withPayload(p: Record<string, unknown>): string {
  return 'svc_' + Buffer.from(JSON.stringify(p)).toString('base64url');
}

describe('tokens: minting and offline attenuation', () => {
  it('a minted token verifies and reads back its restrictions', () => {
    assert.ok(verifies(root));
    const d = decode(root);
    assert.equal(d.nonce, nonce);
    assert.deepEqual(d.caveats, ['expires=2030-01-01T00:00:00Z']);
  });

  it('anyone can append restrictions offline, and the result still verifies', () => {
    const narrowed = attenuate(root, [
      { kind: 'apps', apps: ['shop'] },
      { kind: 'actions', actions: ['read', 'deploy'] },
    ]);
    assert.ok(verifies(narrowed));
    const a = effectiveAuthority(decode(narrowed).restrictions);
    assert.deepEqual([...a.apps!], ['shop']);
    assert.deepEqual([...a.actions!], ['read', 'deploy']);
    const twice = attenuate(narrowed, [{ kind: 'actions', actions: ['read'] }]);
    assert.ok(verifies(twice));
    assert.deepEqual([...effectiveAuthority(decode(twice).restrictions).actions!], ['read']);
  });

  it('a wider restriction appended after a narrower one does not widen the token', () => {
    const narrow = attenuate(root, [
      { kind: 'apps', apps: ['shop'] },
      { kind: 'actions', actions: ['read'] },
    ]);
    const widened = attenuate(narrow, [
      { kind: 'apps', apps: ['shop', 'blog'] },
      { kind: 'actions', actions: ['read', 'deploy', 'admin'] },
    ]);
    assert.ok(verifies(widened));
    const a = effectiveAuthority(decode(widened).restrictions);
    assert.deepEqual([...a.apps!], ['shop']);
    assert.deepEqual([...a.actions!], ['read']);
  });

  it('the effective expiry is the earliest one', () => {
    const later = attenuate(root, [{ kind: 'expires', at: new Date('2031-01-01T00:00:00Z') }]);
    assert.equal(effectiveAuthority(decode(later).restrictions).expiresAt?.toISOString(), '2030-01-01T00:00:00.000Z');
    const sooner = attenuate(root, [{ kind: 'expires', at: new Date('2029-06-01T00:00:00Z') }]);
    assert.equal(effectiveAuthority(decode(sooner).restrictions).expiresAt?.toISOString(), '2029-06-01T00:00:00.000Z');
  });

  it('link ids: a child token carries its parent’s links, a parent does not carry its child’s', () => {
    const child = attenuate(root, [{ kind: 'apps', apps: ['shop'] }]);
    const parentLinks = verifySignature(key, decode(root))!;
    const childLinks = verifySignature(key, decode(child))!;
    assert.deepEqual(childLinks.slice(0, parentLinks.length), parentLinks);
    assert.ok(!parentLinks.includes(tokenId(child)));
    assert.equal(childLinks[childLinks.length - 1], tokenId(child));
    assert.match(tokenId(child), /^tok_[A-Za-z0-9_-]{24}$/);
  });
});

describe('tokens: tampering is detected', () => {
  const narrowed = attenuate(root, [
    { kind: 'apps', apps: ['shop'] },
    { kind: 'actions', actions: ['read'] },
  ]);
  const p = payloadOf(narrowed);
  const caveats = p.r as string[];

  it('dropping a restriction breaks the signature', () => {
    assert.ok(!verifies(withPayload({ ...p, r: caveats.slice(0, -1) })));
    assert.ok(!verifies(withPayload({ ...p, r: caveats.slice(1) })));
  });

  it('reordering restrictions breaks the signature', () => {
    assert.ok(!verifies(withPayload({ ...p, r: [caveats[0], caveats[2], caveats[1]] })));
  });

  it('editing a restriction or the nonce breaks the signature', () => {
    assert.ok(!verifies(withPayload({ ...p, r: [caveats[0], 'apps=blog', caveats[2]] })));
    assert.ok(!verifies(withPayload({ ...p, n: nonce.slice(0, -1) + (nonce.endsWith('A') ? 'B' : 'A') })));
  });

  it('flipping any single byte of the signature breaks it', () => {
    const sig = Buffer.from(p.s as string, 'base64url');
    for (let i = 0; i < sig.length; i++) {
      const flipped = Buffer.from(sig);
      flipped[i]! ^= 0x01;
      assert.ok(!verifies(withPayload({ ...p, s: flipped.toString('base64url') })), `byte ${i}`);
    }
  });

  it('flipping any character of the encoded token never yields another valid token', () => {
    for (let i = 4; i < narrowed.length; i++) {
      const flipped = narrowed.slice(0, i) + (narrowed[i] === 'A' ? 'B' : 'A') + narrowed.slice(i + 1);
      let decoded;
      try {
        decoded = decode(flipped);
      } catch (err) {
        assert.ok(err instanceof TokenFormatError, String(err));
        continue;
      }
      // A flip in the unused bits of the last base64 character decodes to the very same payload.
      const same = JSON.stringify(payloadOf(flipped)) === JSON.stringify(p);
      assert.ok(same || verifySignature(key, decoded) === undefined, `flip at ${i} verified`);
    }
  });

  it('a token signed with another key does not verify', () => {
    assert.ok(!verifies(narrowed, randomBytes(32)));
  });

  it('truncated, oversized, foreign and malformed tokens are format errors', () => {
    const bad = [
      narrowed.slice(0, narrowed.length - 10),
      narrowed.slice(0, 20),
      'svc_',
      'Bearer xyz',
      'svc_' + 'A'.repeat(maxTokenLength),
      'svc_***',
      withPayload({ ...p, extra: 1 }),
      withPayload({ ...p, v: 2 }),
      withPayload({ ...p, r: 'apps=shop' }),
      withPayload({ ...p, r: [...caveats, 'region=eu'] }),
      withPayload({ ...p, r: Array.from({ length: 65 }, () => 'actions=read') }),
      withPayload({ ...p, s: 'short' }),
      'svc_' + Buffer.from('[1,2]').toString('base64url'),
    ];
    for (const t of bad) assert.throws(() => decode(t), TokenFormatError, t.slice(0, 40));
  });
});

describe('tokens: restriction syntax', () => {
  it('parses and refuses restriction values', () => {
    assert.deepEqual(parseRestriction('apps=shop,blog'), { kind: 'apps', apps: ['shop', 'blog'] });
    assert.deepEqual(parseRestriction('actions=read'), { kind: 'actions', actions: ['read'] });
    for (const bad of ['apps=', 'apps=Shop', 'apps=a..b', 'actions=fly', 'expires=tomorrow', 'expires=2030-01-01', 'who=me', 'apps']) {
      assert.throws(() => parseRestriction(bad), TokenFormatError, bad);
    }
  });
});
