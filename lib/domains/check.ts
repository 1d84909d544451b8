// One check of a custom domain's records against what DNS answers (docs/decisions/0027-app-domains.md):
// per record what was expected and what was observed, whether ownership and routing hold, and in
// words what to publish. Pure but for the resolver, which the caller configures (its servers, its
// timeouts) and tests replace with a table.
import { randomBytes } from 'node:crypto';
import type { DomainName } from './names.js';
import { canonicalAddress, edgeAddressesOf, hostOf, type ExpectedRecord } from './records.js';
import { isNoRecords } from '../dns/answers.js';

/** What the check asks DNS; node's `dns.promises.Resolver` is one. */
export interface DomainResolver {
  resolveTxt(name: string): Promise<string[][]>;
  resolveCname(name: string): Promise<string[]>;
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
}

export type CheckedRecord = ExpectedRecord & { observed: string[]; ok: boolean };

export type DomainCheckReason = 'Verified' | 'OwnershipMissing' | 'OwnershipWrong' | 'RoutingMissing' | 'RoutingWrong' | 'RecordsMissing';

export interface DomainCheck {
  records: CheckedRecord[];
  ownership: boolean;
  routing: boolean;
  reason: DomainCheckReason;
  /** In words: what is missing or wrong, and what to publish. */
  message: string;
}

/**
 * DNS did not answer (SERVFAIL, a timeout, a refused connection): nothing is known about the
 * records, so the caller keeps the domain's status and asks again, rather than calling a domain
 * misconfigured because a resolver hiccupped.
 */
export class DnsUnavailableError extends Error {
  constructor(
    /** `TXT _svc-challenge.shop.example` */
    readonly query: string,
    /** The resolver's code (`ESERVFAIL`, `ETIMEOUT`, ...), when it gave one. */
    readonly code: string | undefined,
    cause: unknown,
  ) {
    super(`the ${query} query failed${code ? ` (${code})` : ''}`, { cause });
    this.name = 'DnsUnavailableError';
  }
}

export async function checkDomain(
  d: DomainName,
  expected: ExpectedRecord[],
  resolver: DomainResolver,
  o: { edgeAddresses?: readonly string[]; randomLabel?: () => string } = {},
): Promise<DomainCheck> {
  // A wildcard answers for any name under it; a fresh random one cannot have records of its own.
  const probe = d.wildcard ? `${(o.randomLabel ?? randomLabel)()}.${d.base}` : d.name;
  const edge = edgeAddressesOf([...expected.filter(isAddressRecord).map((r) => r.value), ...(o.edgeAddresses ?? [])]);
  const [ownership, routing, certificate] = await Promise.all([
    checkOwnership(expected, resolver),
    checkRouting(expected, resolver, { probe, wildcard: d.wildcard, edge }),
    checkDelegation(expected, resolver),
  ]);
  const records = [...ownership.records, ...routing.records, ...certificate.records];
  // The certificate's record never decides verification (the name routes without it): it is said.
  const andCertificate = certificate.problem ? `; for its certificate, ${certificate.problem}` : '';
  if (ownership.ok && routing.ok)
    return {
      records,
      ownership: true,
      routing: true,
      reason: 'Verified',
      message: `the ownership and routing records are published${andCertificate}`,
    };
  const reason: DomainCheckReason =
    !ownership.ok && !routing.ok && ownership.missing && routing.missing
      ? 'RecordsMissing'
      : !ownership.ok
        ? ownership.missing
          ? 'OwnershipMissing'
          : 'OwnershipWrong'
        : routing.missing
          ? 'RoutingMissing'
          : 'RoutingWrong';
  const message = [ownership.problem, routing.problem].filter((p): p is string => p !== undefined).join('; ') + andCertificate;
  return { records, ownership: ownership.ok, routing: routing.ok, reason, message };
}

/**
 * A wildcard's `_acme-challenge` CNAME to the platform's DNS-01 zone. DNS failing here is not a
 * failure of the check (verification does not depend on this record): it reads as not seen.
 */
async function checkDelegation(expected: ExpectedRecord[], resolver: DomainResolver): Promise<Pick<Part, 'records' | 'problem'>> {
  const records = await Promise.all(
    expected
      .filter((r) => r.purpose === 'certificate')
      .map(async (r): Promise<CheckedRecord> => {
        const observed = (await lookup(`CNAME ${r.name}`, () => resolver.resolveCname(r.name)).catch(() => [])).map(hostOf);
        return { ...r, observed, ok: observed.includes(hostOf(r.value)) };
      }),
  );
  const wrong = records.filter((r) => !r.ok);
  const problem = wrong.length
    ? wrong
        .map(
          (r) => (r.observed.length ? `${r.name} is a CNAME to ${r.observed.join(', ')}, not ${r.value}: ` : '') + `publish ${describe(r)}`,
        )
        .join('; ')
    : undefined;
  return { records, problem };
}

interface Part {
  records: CheckedRecord[];
  ok: boolean;
  /** DNS had nothing at all where the records belong (as against something else). */
  missing: boolean;
  problem: string | undefined;
}

async function checkOwnership(expected: ExpectedRecord[], resolver: DomainResolver): Promise<Part> {
  const records = await Promise.all(
    expected
      .filter((r) => r.purpose === 'ownership')
      .map(async (r): Promise<CheckedRecord> => {
        // A long TXT value arrives in chunks of 255 bytes; the record's value is them joined.
        const observed = (await lookup(`TXT ${r.name}`, () => resolver.resolveTxt(r.name))).map((chunks) => chunks.join(''));
        return { ...r, observed, ok: observed.includes(r.value) };
      }),
  );
  const ok = records.length > 0 && records.every((r) => r.ok);
  const missing = records.every((r) => r.observed.length === 0);
  const problem = ok
    ? undefined
    : records
        .filter((r) => !r.ok)
        .map((r) =>
          r.observed.length === 0
            ? `publish ${describe(r)}`
            : `${r.name} has the TXT values ${quoted(r.observed)}, none of them ${r.value}: publish ${describe(r)}`,
        )
        .join('; ');
  return { records, ok, missing, problem };
}

async function checkRouting(
  expected: ExpectedRecord[],
  resolver: DomainResolver,
  o: { probe: string; wildcard: boolean; edge: string[] },
): Promise<Part> {
  const wanted = expected.filter((r) => r.purpose === 'routing');
  const [cnames, v4, v6] = await Promise.all([
    wanted.some((r) => r.type === 'CNAME') ? lookup(`CNAME ${o.probe}`, () => resolver.resolveCname(o.probe)) : Promise.resolve([]),
    lookup(`A ${o.probe}`, () => resolver.resolve4(o.probe)),
    lookup(`AAAA ${o.probe}`, () => resolver.resolve6(o.probe)),
  ]);
  const targets = cnames.map(hostOf);
  const a = addresses(v4);
  const aaaa = addresses(v6);
  const all = [...a, ...aaaa];
  const atEdge = (list: string[]) => list.every((x) => o.edge.includes(x));
  // Reaching the edge is what routes a name (ingress-auth routes by the Host header): so a name whose
  // addresses are all the edge's is routed, whatever CNAMEs lead there.
  const addressesOk = o.edge.length > 0 && all.length > 0 && atEdge(all);
  // Asked at the wildcard's own name (`*.<base>`, as the API does) there is nothing more to say.
  const where = o.wildcard && !o.probe.startsWith('*.') ? ` (${o.probe}, a name under the wildcard, was asked)` : '';

  const cname = wanted.find((r) => r.type === 'CNAME');
  if (cname) {
    const ok = targets.includes(hostOf(cname.value)) || addressesOk;
    const observed = targets.length > 0 ? targets : all;
    const record: CheckedRecord = { ...cname, observed, ok };
    const orEdge = o.edge.length > 0 ? ` (or A/AAAA records to the platform's edge: ${o.edge.join(', ')})` : '';
    let problem: string | undefined;
    if (!ok && observed.length === 0) problem = `publish ${describe(cname)}${orEdge}${where}`;
    else if (!ok && targets.length > 0)
      problem = `${cname.name} is a CNAME to ${targets.join(', ')}, not ${cname.value}: publish ${describe(cname)}${orEdge}${where}`;
    else if (!ok)
      problem = `${cname.name} has the addresses ${all.join(', ')}, which are not the platform's: replace them with ${describe(cname)}${orEdge}${where}`;
    return { records: [record], ok, missing: observed.length === 0, problem };
  }

  // An apex: its A/AAAA records must all lead to the edge. Each expected row says whether that
  // address is published (and nothing foreign beside it); routing needs any of them, not all.
  const records = wanted.map((r): CheckedRecord => {
    const observed = r.type === 'A' ? a : aaaa;
    return { ...r, observed, ok: observed.includes(r.value) && atEdge(observed) };
  });
  const ok = addressesOk;
  const publish = wanted.map(describe).join(' and ');
  let problem: string | undefined;
  if (!ok && all.length === 0) problem = `publish ${publish}${where}`;
  else if (!ok) {
    const foreign = all.filter((x) => !o.edge.includes(x));
    problem = `${wanted[0]?.name ?? o.probe} has the addresses ${foreign.join(', ')}, which are not the platform's: replace them with ${publish}${where}`;
  }
  return { records, ok, missing: all.length === 0, problem };
}

async function lookup<T>(query: string, ask: () => Promise<T[]>): Promise<T[]> {
  try {
    return await ask();
  } catch (err) {
    // No such records is a fact about the domain, not a failure of DNS.
    if (isNoRecords(err)) return [];
    const code = (err as { code?: unknown } | null)?.code;
    throw new DnsUnavailableError(query, typeof code === 'string' ? code : undefined, err);
  }
}

function addresses(answers: string[]): string[] {
  return answers.map((x) => canonicalAddress(x) ?? x);
}

function isAddressRecord(r: ExpectedRecord): boolean {
  return r.type === 'A' || r.type === 'AAAA';
}

function describe(r: ExpectedRecord): string {
  return `${r.type} ${r.name} with the value ${r.value}`;
}

/** The values as a person reads them, a few and short: they are the domain's to choose, and end up in a status. */
function quoted(values: string[]): string {
  const shown = values.slice(0, 3).map((v) => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v));
  return values.length > 3 ? `${shown.join(', ')} and ${values.length - 3} more` : shown.join(', ');
}

function randomLabel(): string {
  return `svc-check-${randomBytes(4).toString('hex')}`;
}
