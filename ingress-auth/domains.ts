// Custom domains (docs/decisions/0027-app-domains.md): which App a name that is not an app hostname
// is served by, from the Domain objects of every namespace (an informer in routes.ts). A Domain
// routes only while its status says Verified and it is not being deleted: the verifier sets
// Misconfigured the moment a record is gone, and that event alone must stop the routing.
//
// Names are claimed globally in PostgreSQL, so two verified Domains never name one domain; this
// index does not rely on it (a Domain can be written with kubectl, and a claim released and taken
// again races the informers): of several, the oldest holds the name, as for app hostnames
// (decisions/0008), so every replica agrees without coordination.
import { dnsLabel } from '../lib/contract.js';
import type { Domain } from '../lib/resources/index.js';
import { hostnameOf } from './host.js';

/** The App a domain serves: by name, in the Domain's own namespace (never another's). */
export interface DomainTarget {
  namespace: string;
  app: string;
}

interface Entry {
  uid: string;
  created: number;
  target: DomainTarget;
}

type Table = Map<string, Map<string, Entry>>;

/** Verified Domains by name: `exact(name)`, or `*.name` matching exactly one more label. */
export class DomainIndex {
  private readonly exact: Table = new Map();
  /** Wildcards by the name under their `*.` (`*.shop.example` under `shop.example`). */
  private readonly wildcards: Table = new Map();
  /** Where each routing Domain (by uid) is now, to take it out when it changes or goes. */
  private readonly placed = new Map<string, { table: Table; key: string }>();

  upsert(d: Domain): void {
    this.remove(d);
    const uid = d.metadata?.uid;
    const namespace = d.metadata?.namespace;
    const app = d.spec?.app;
    if (!uid || !namespace || !app || d.status?.phase !== 'Verified' || d.metadata.deletionTimestamp) return;
    const name = nameOf(d.spec.domain);
    if (!name) return;
    const table = name.wildcard ? this.wildcards : this.exact;
    let same = table.get(name.key);
    if (!same) table.set(name.key, (same = new Map<string, Entry>()));
    same.set(uid, { uid, created: createdOf(d), target: { namespace, app } });
    this.placed.set(uid, { table, key: name.key });
  }

  remove(d: Domain): void {
    const uid = d.metadata?.uid;
    const at = uid === undefined ? undefined : this.placed.get(uid);
    if (!at) return;
    this.placed.delete(uid!);
    const same = at.table.get(at.key);
    same?.delete(uid!);
    if (same?.size === 0) at.table.delete(at.key);
  }

  /**
   * The target of a Host header value (normalized here: hostnameOf): the exact name's Domain, else
   * the wildcard one label up. An exact Domain decides even when its App is missing: a name verified
   * for one App never falls through to the wildcard's App meanwhile.
   */
  target(host: string | undefined): DomainTarget | undefined {
    const h = hostnameOf(host);
    if (h === undefined || !isHostname(h)) return undefined;
    const exact = oldest(this.exact.get(h));
    if (exact) return exact.target;
    const dot = h.indexOf('.');
    return dot === -1 ? undefined : oldest(this.wildcards.get(h.slice(dot + 1)))?.target;
  }
}

/** `spec.domain` as the index keys it, or undefined for a name that can never be a request's host. */
function nameOf(domain: string | undefined): { key: string; wildcard: boolean } | undefined {
  if (!domain) return undefined;
  let d = domain.trim().toLowerCase();
  if (d.endsWith('.')) d = d.slice(0, -1);
  const wildcard = d.startsWith('*.');
  const key = wildcard ? d.slice(2) : d;
  return isHostname(key) ? { key, wildcard } : undefined;
}

/**
 * A DNS hostname and not an address. A last label of digits (or `0x` and hex) makes a browser read
 * the whole name as an IPv4 address (the WHATWG URL host parser: `127.1`, `0x7f.1`), so no such
 * name is a domain either way.
 */
function isHostname(h: string): boolean {
  if (h.length > 253) return false;
  const labels = h.split('.');
  if (!labels.every((l) => dnsLabel.test(l))) return false;
  return !/^(\d+|0x[0-9a-f]*)$/.test(labels[labels.length - 1]!);
}

function createdOf(d: Domain): number {
  const t = d.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : Number.POSITIVE_INFINITY;
}

/** The oldest entry (creation time, then uid): the same on every replica. */
function oldest(same: Map<string, Entry> | undefined): Entry | undefined {
  if (!same) return undefined;
  let best: Entry | undefined;
  for (const e of same.values()) {
    if (!best || e.created < best.created || (e.created === best.created && e.uid < best.uid)) best = e;
  }
  return best;
}
