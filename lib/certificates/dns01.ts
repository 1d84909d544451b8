// DNS-01 for wildcard domains (docs/decisions/0028-https.md). A wildcard (`*.shop.example`) can only
// be validated by DNS-01: a TXT record at `_acme-challenge.shop.example`. The platform cannot write
// into a tenant's zone, so the tenant delegates that one name to the platform, once, by a CNAME to a
// name in a zone the platform owns and updates by RFC 2136 (config `certificates.acme.dns01`), as
// Fly.io's `_acme-challenge` CNAME and acme-dns do. The CA follows the CNAME.
//
// The delegation target is derived from the account and the name: a CNAME left behind by one account
// (a removed domain, a sold name) delegates nothing to another account, whose target differs.
import { createHash } from 'node:crypto';
import { lookup, Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isNoRecords } from '../dns/answers.js';

/** Where a DNS-01 challenge of `base` (`shop.example` for `*.shop.example`) is asked for. */
export const acmeChallengeName = (base: string) => `_acme-challenge.${base}`;

/** The name in the platform's zone that `_acme-challenge.<base>` of this account is delegated to. */
export function dns01Target(zone: string, accountId: string, base: string): string {
  // base32 (RFC 4648, lowercase): a DNS label of letters and digits; 130 bits can't be guessed into a collision.
  const digest = createHash('sha256').update(`${accountId}\n${base}`).digest();
  let bits = 0;
  let value = 0;
  let label = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && label.length < 26) {
      label += 'abcdefghijklmnopqrstuvwxyz234567'[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `${label}.${zone}`;
}

/**
 * Where the platform's own `*.<apps domain>` is validated by DNS-01: `_acme-challenge.<apps domain>`
 * itself when it lies in the zone the platform updates, else the name in that zone a platform team
 * delegates it to by a CNAME (as a tenant does, the "account" being the platform's).
 */
export function platformDns01Name(appsDomain: string, zone: string): string {
  const name = acmeChallengeName(appsDomain);
  return name.endsWith(`.${zone}`) ? name : dns01Target(zone, 'platform', appsDomain);
}

/** Publishes and withdraws TXT records (lib/dns/update.ts over RFC 2136; a fake in unit tests). */
export interface DnsProvider {
  /** Adds `value` to the TXT records of `fqdn` (other values of the name stay). */
  addTxt(fqdn: string, value: string, ttl: number): Promise<void>;
  /** Removes that one value; removing one that is not there succeeds. */
  removeTxt(fqdn: string, value: string): Promise<void>;
}

/** Asks the zone's own server for a name's TXT values (the propagation check before the CA is told). */
export type TxtLookup = (fqdn: string) => Promise<string[]>;

/**
 * TXT answers of the zone's own server (`host` a name or an address): what the CA will see once the
 * delegation is followed, without a recursive resolver's cache in between.
 */
export function txtLookupAt(server: { host: string; port: number }): TxtLookup {
  let resolver: Promise<Resolver> | undefined;
  const make = async () => {
    const r = new Resolver({ timeout: 2_000, tries: 1 });
    // A Resolver takes addresses only; a Service name is looked up once, through the system's resolver.
    const address = isIP(server.host) ? server.host : (await lookup(server.host)).address;
    r.setServers([isIP(address) === 6 ? `[${address}]:${server.port}` : `${address}:${server.port}`]);
    return r;
  };
  return async (fqdn) => {
    resolver ??= make().catch((err: unknown) => {
      resolver = undefined;
      throw err;
    });
    const answers = await (await resolver).resolveTxt(fqdn).catch((err: unknown) => {
      if (isNoRecords(err)) return [];
      // The server's address may have moved (a Service's, a host name's): looked up again next time.
      resolver = undefined;
      throw err;
    });
    // A long TXT value arrives in chunks of 255 bytes; the record's value is them joined.
    return answers.map((chunks) => chunks.join(''));
  };
}
