// The DNS records a person publishes for a custom domain (docs/decisions/0027-app-domains.md): one
// proving the account owns the name, and one pointing the name at the platform; for a wildcard on a
// platform with DNS-01, a third delegating its `_acme-challenge` name to the platform's zone
// (docs/decisions/0028-https.md), which its certificate needs but its routing does not. The API
// shows them when a domain is added, and the check (check.ts) compares DNS's answers with them.
import { isIP } from 'node:net';
import { acmeChallengeName, dns01Target } from '../certificates/dns01.js';
import type { DomainName } from './names.js';

export interface ExpectedRecord {
  purpose: 'ownership' | 'routing' | 'certificate';
  type: 'TXT' | 'CNAME' | 'A' | 'AAAA';
  name: string;
  value: string;
}

/** Under the base, not the name: a wildcard's ownership is proven where the wildcard cannot answer for it. */
export const ownershipLabel = '_svc-challenge';
export const ownershipPrefix = 'svc-verify=';

export function expectedRecords(
  d: DomainName,
  o: {
    token: string;
    appHost: string;
    edgeAddresses: readonly string[];
    /** The platform's DNS-01 zone and the account: a wildcard's `_acme-challenge` delegation. */
    dns01?: { zone: string; accountId: string };
  },
): ExpectedRecord[] {
  const ownership: ExpectedRecord = {
    purpose: 'ownership',
    type: 'TXT',
    name: `${ownershipLabel}.${d.base}`,
    value: `${ownershipPrefix}${o.token}`,
  };
  const certificate: ExpectedRecord[] =
    d.wildcard && o.dns01
      ? [
          {
            purpose: 'certificate',
            type: 'CNAME',
            name: acmeChallengeName(d.base),
            value: dns01Target(o.dns01.zone, o.dns01.accountId, d.base),
          },
        ]
      : [];
  if (!routesByAddress(d))
    return [ownership, { purpose: 'routing', type: 'CNAME', name: d.name, value: hostOf(o.appHost) }, ...certificate];
  return [
    ownership,
    ...edgeAddressesOf(o.edgeAddresses).map((a): ExpectedRecord => ({
      purpose: 'routing',
      type: isIP(a) === 4 ? 'A' : 'AAAA',
      name: d.name,
      value: a,
    })),
    ...certificate,
  ];
}

/**
 * Why the domain cannot be added on this platform, or undefined: an apex has no CNAME (DNS allows
 * none beside the zone's own records), so it needs A/AAAA records to the platform's edge, and a
 * platform without edge addresses cannot serve one. A wildcard over an apex is a CNAME, and fine.
 */
export function apexNeedsEdge(d: DomainName, edgeAddresses: readonly string[]): string | undefined {
  if (!routesByAddress(d) || edgeAddressesOf(edgeAddresses).length > 0) return undefined;
  return (
    `${d.name} is an apex domain, where DNS allows no CNAME, and this platform has no edge addresses for A/AAAA records: ` +
    `add a subdomain such as www.${d.name} instead`
  );
}

/** Whether the name is routed by A/AAAA records rather than a CNAME. */
export function routesByAddress(d: DomainName): boolean {
  return d.apex && !d.wildcard;
}

/**
 * The edge addresses in the spelling DNS answers use (IPv6 compressed, lowercase), so configured
 * and observed addresses compare as strings; anything that is not an address is left out.
 */
export function edgeAddressesOf(addresses: readonly string[]): string[] {
  return [...new Set(addresses.map(canonicalAddress).filter((a): a is string => a !== undefined))];
}

export function canonicalAddress(address: string): string | undefined {
  const a = address.trim();
  switch (isIP(a)) {
    case 4:
      return a;
    case 6:
      // The URL parser writes IPv6 the one way RFC 5952 says; a zone (%eth0) is no public address.
      return a.includes('%') ? undefined : new URL(`http://[${a}]/`).hostname.slice(1, -1);
    default:
      return undefined;
  }
}

/** A host name as DNS answers compare: lowercase, no trailing dot. */
export function hostOf(name: string): string {
  return name.replace(/\.$/, '').toLowerCase();
}
