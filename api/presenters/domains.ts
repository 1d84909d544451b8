// A custom domain as the API shows it (docs/api/domains.md): its name both ways, its status in
// lowercase, the reason in words, and each record to publish with what DNS last answered for it.
import { z } from 'zod';
import type { DomainView } from '../domains/actions.js';

const recordSchema = z.object({
  purpose: z
    .enum(['ownership', 'routing', 'certificate'])
    .describe(
      "ownership: proves the account holds the name; routing: sends its traffic here; certificate: a wildcard's _acme-challenge delegated to the platform for DNS-01 (its certificate needs it, its routing does not)",
    ),
  type: z.enum(['TXT', 'CNAME', 'A', 'AAAA']),
  name: z.string(),
  value: z.string().describe('Exactly what to publish'),
  observed: z.array(z.string()).nullable().describe('What DNS answered at the last check; null before the first'),
  ok: z.boolean().nullable().describe('Whether the record is right; null before the first check'),
});

const certificateSchema = z
  .object({
    status: z.enum(['pending', 'issued', 'failed']).describe('issued: served over HTTPS; pending: being ordered; failed: see reason'),
    reason: z.string().nullable().describe('In words: what happened, and when it is tried again'),
    expires_at: z.string().nullable(),
    renews_after: z.string().nullable().describe('A third of its lifetime before it expires, less a random jitter'),
    retry_after: z.string().nullable().describe('After a failure or a refusal: not ordered again before this'),
  })
  .describe("The domain's HTTPS certificate (docs/api/domains.md); null until the domain is verified");

export const domainSchema = z
  .object({
    name: z.string().describe('Lowercase ASCII, punycode for an IDN, *.<name> for a wildcard'),
    unicode_name: z.string(),
    app: z.string(),
    wildcard: z.boolean(),
    apex: z.boolean().describe('The name is its own registrable domain: A/AAAA records, no CNAME'),
    declared: z.boolean().describe("Added because the App's spec.domains names it (kubectl, GitOps): removed when it no longer does"),
    status: z.enum(['pending', 'verified', 'misconfigured', 'failed']),
    reason: z.string().nullable().describe('What is missing or wrong, in words; null once verified'),
    records: z.array(recordSchema),
    certificate: certificateSchema.nullable(),
    created_at: z.string(),
    checked_at: z.string().nullable(),
    verified_at: z.string().nullable(),
    next_check_at: z.string().nullable(),
  })
  .describe('A custom domain of an app (docs/api/domains.md)');

export type DomainBody = z.infer<typeof domainSchema>;

const phases = { Pending: 'pending', Verified: 'verified', Misconfigured: 'misconfigured', Failed: 'failed' } as const;
const certificatePhases = { Pending: 'pending', Issued: 'issued', Failed: 'failed' } as const;

function presentCertificate(c: NonNullable<DomainView['record']['status']>['certificate']): DomainBody['certificate'] {
  if (!c?.phase) return null;
  return {
    status: certificatePhases[c.phase],
    reason: c.message ?? null,
    expires_at: c.notAfter ?? null,
    renews_after: c.renewAfter ?? null,
    retry_after: c.retryAfter ?? null,
  };
}

export function presentDomain(v: DomainView): DomainBody {
  const r = v.record;
  const checked = (e: { purpose: string; type: string; name: string; value: string }) =>
    r.records.find((s) => s.purpose === e.purpose && s.type === e.type && s.name === e.name && s.expected.includes(e.value));
  return {
    name: v.domain.name,
    unicode_name: v.domain.unicode,
    app: r.app,
    wildcard: v.domain.wildcard,
    apex: v.domain.apex,
    declared: r.declared,
    status: phases[r.phase],
    reason: r.phase === 'Verified' ? null : (r.message ?? 'not checked yet: the first check runs within seconds of adding'),
    records: v.expected.map((e) => {
      const seen = checked(e);
      return { purpose: e.purpose, type: e.type, name: e.name, value: e.value, observed: seen?.observed ?? null, ok: seen?.ok ?? null };
    }),
    certificate: presentCertificate(r.status?.certificate),
    created_at: r.createdAt.toISOString(),
    checked_at: r.checkedAt?.toISOString() ?? null,
    verified_at: r.verifiedAt?.toISOString() ?? null,
    next_check_at: r.nextCheckAt?.toISOString() ?? null,
  };
}

/** An added domain, and whether the platform wrote its records (a name the account bought here). */
export const addedSchema = z.object({ domain: domainSchema }).extend({
  records_published: z
    .boolean()
    .describe(
      'The records are written in the DNS the registrar serves for the name (bought through the platform); false: publish them yourself',
    ),
  records_error: z.string().nullable().describe('Why writing them at the registrar failed (publish them, or add the domain again)'),
});
