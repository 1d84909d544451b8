// `svc token inspect` and `svc token attenuate`: offline, with nothing but the token.
import { parseDuration } from '../lib/duration.js';
import {
  actions as knownActions,
  attenuate,
  decode,
  effectiveAuthority,
  parseRestriction,
  tokenId,
  type Restriction,
} from '../lib/tokens/token.js';

export class UsageError extends Error {}

export function inspectToken(token: string, now = new Date()) {
  const d = decode(token);
  const a = effectiveAuthority(d.restrictions);
  return {
    verified: false,
    id: tokenId(token),
    nonce: d.nonce,
    key_id: d.keyId,
    restrictions: d.caveats,
    effective: {
      apps: a.apps ? [...a.apps] : null,
      actions: a.actions ? [...a.actions] : null,
      expires_at: a.expiresAt?.toISOString() ?? null,
      expired: a.expiresAt ? a.expiresAt.getTime() <= now.getTime() : false,
    },
  };
}

function inWords(ms: number): string {
  const abs = Math.abs(ms);
  const [n, unit] = abs >= 86400e3 ? [abs / 86400e3, 'days'] : abs >= 3600e3 ? [abs / 3600e3, 'hours'] : [abs / 60e3, 'minutes'];
  return `${Math.floor(n)} ${unit}`;
}

export function formatInspection(info: ReturnType<typeof inspectToken>, now = new Date()): string {
  const e = info.effective;
  const expiry = e.expires_at
    ? `${e.expires_at} (${e.expired ? `EXPIRED ${inWords(now.getTime() - Date.parse(e.expires_at))} ago` : `in ${inWords(Date.parse(e.expires_at) - now.getTime())}`})`
    : 'none';
  return [
    'token (UNVERIFIED: decoded offline; only the platform can check its signature and revocation)',
    `  id:       ${info.id}`,
    `  nonce:    ${info.nonce}`,
    `  key:      ${info.key_id}`,
    '  restrictions, in order (all must hold):',
    ...(info.restrictions.length ? info.restrictions.map((r, i) => `    ${i + 1}. ${r}`) : ['    (none)']),
    '  effective:',
    `    apps:     ${e.apps ? e.apps.join(', ') || '(none)' : 'all'}`,
    `    actions:  ${e.actions ? e.actions.join(', ') || '(none)' : 'all'}`,
    `    expires:  ${expiry}`,
  ].join('\n');
}

export function attenuateToken(
  token: string,
  opts: { apps?: string | undefined; actions?: string | undefined; expiresIn?: string | undefined },
  now = new Date(),
): string {
  const added: Restriction[] = [];
  if (opts.apps !== undefined) added.push(parseRestriction(`apps=${opts.apps}`));
  if (opts.actions !== undefined) {
    try {
      added.push(parseRestriction(`actions=${opts.actions}`));
    } catch {
      throw new UsageError(`--actions takes a comma-separated list of ${knownActions.join(', ')}`);
    }
  }
  if (opts.expiresIn !== undefined) {
    const ms = parseDuration(opts.expiresIn);
    if (ms === undefined) throw new UsageError('--expires-in takes a duration like 30m, 12h or 7d');
    added.push({ kind: 'expires', at: new Date(Math.floor((now.getTime() + ms) / 1000) * 1000) });
  }
  if (!added.length) throw new UsageError('give at least one of --apps, --actions, --expires-in');
  return attenuate(token, added);
}
