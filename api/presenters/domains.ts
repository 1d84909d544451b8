// A custom domain as the API shows it (docs/api/domains.md): its name both ways, its status in
// lowercase, the reason in words, and each record to publish with what DNS last answered for it.
import { z } from 'zod';
import type { DomainView } from '../domains/actions.js';

const recordSchema = z.object({
  purpose: z.enum(['ownership', 'routing']).describe('ownership: proves the account holds the name; routing: sends its traffic here'),
  type: z.enum(['TXT', 'CNAME', 'A', 'AAAA']),
  name: z.string(),
  value: z.string().describe('Exactly what to publish'),
  observed: z.array(z.string()).nullable().describe('What DNS answered at the last check; null before the first'),
  ok: z.boolean().nullable().describe('Whether the record is right; null before the first check'),
});

export const domainSchema = z
  .object({
    name: z.string().describe('Lowercase ASCII, punycode for an IDN, *.<name> for a wildcard'),
    unicode_name: z.string(),
    app: z.string(),
    wildcard: z.boolean(),
    apex: z.boolean().describe('The name is its own registrable domain: A/AAAA records, no CNAME'),
    status: z.enum(['pending', 'verified', 'misconfigured', 'failed']),
    reason: z.string().nullable().describe('What is missing or wrong, in words; null once verified'),
    records: z.array(recordSchema),
    created_at: z.string(),
    checked_at: z.string().nullable(),
    verified_at: z.string().nullable(),
    next_check_at: z.string().nullable(),
  })
  .describe('A custom domain of an app (docs/api/domains.md)');

export type DomainBody = z.infer<typeof domainSchema>;

const phases = { Pending: 'pending', Verified: 'verified', Misconfigured: 'misconfigured', Failed: 'failed' } as const;

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
    status: phases[r.phase],
    reason: r.phase === 'Verified' ? null : (r.message ?? 'not checked yet: the first check runs within seconds of adding'),
    records: v.expected.map((e) => {
      const seen = checked(e);
      return { purpose: e.purpose, type: e.type, name: e.name, value: e.value, observed: seen?.observed ?? null, ok: seen?.ok ?? null };
    }),
    created_at: r.createdAt.toISOString(),
    checked_at: r.checkedAt?.toISOString() ?? null,
    verified_at: r.verifiedAt?.toISOString() ?? null,
    next_check_at: r.nextCheckAt?.toISOString() ?? null,
  };
}
