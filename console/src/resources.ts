// The domains, databases and volumes pages, the pure parts: a custom domain's status and its
// certificate in words, the DNS records to publish as a provider's form wants them, what the last
// check saw of each, a database's phase and a volume's owner in words, and sizes in words. No DOM:
// unit-tested.
import type { Tone } from './status.js';

/** What these functions read of a custom domain (GET /apps/{appID}/domains; docs/api/domains.md). */
export interface DomainFacts {
  name: string;
  unicode_name: string;
  app: string;
  wildcard: boolean;
  apex: boolean;
  declared: boolean;
  status: 'pending' | 'verified' | 'misconfigured' | 'failed';
  reason: string | null;
  records: RecordFacts[];
  certificate: CertificateFacts | null;
  checked_at: string | null;
  next_check_at: string | null;
}

export interface RecordFacts {
  purpose: 'ownership' | 'routing' | 'certificate';
  type: 'TXT' | 'CNAME' | 'A' | 'AAAA';
  name: string;
  value: string;
  observed: string[] | null;
  ok: boolean | null;
}

export interface CertificateFacts {
  status: 'pending' | 'issued' | 'failed';
  reason: string | null;
  expires_at: string | null;
  renews_after: string | null;
  retry_after: string | null;
}

/** A domain's status in words (the CLI's, said to a person), and what to do about it; `reason` is the API's, shown beside. */
export function domainStatusInWords(d: Pick<DomainFacts, 'status' | 'app'>): { text: string; tone: Tone; next: string | undefined } {
  switch (d.status) {
    case 'pending':
      return {
        text: 'Pending: the records have not been seen yet',
        tone: 'busy',
        next: 'Publish the records below; the platform checks again by itself, or check now.',
      };
    case 'verified':
      return { text: `Verified: routes to ${d.app}`, tone: 'ok', next: undefined };
    case 'misconfigured':
      return {
        text: 'Misconfigured: not routing until the records are right again',
        tone: 'bad',
        next: 'Put the records marked wrong right again, then check now.',
      };
    case 'failed':
      return {
        text: 'Failed: no right records in 7 days, the name was released',
        tone: 'bad',
        next: 'Publish the records below, then add the domain again.',
      };
  }
}

/** The name as a person reads it, with the stored (punycode) one beside when they differ. */
export function domainLabel(d: Pick<DomainFacts, 'name' | 'unicode_name'>): string {
  return d.unicode_name && d.unicode_name !== d.name ? `${d.unicode_name} (${d.name})` : d.name;
}

/** The HTTPS certificate in words: none before verification, then pending, served until when, or failed and why. */
export function certificateInWords(d: Pick<DomainFacts, 'status' | 'certificate'>, day = isoDay): { text: string; tone: Tone } {
  const c = d.certificate;
  if (!c) {
    return d.status === 'verified'
      ? { text: 'None yet: ordered within seconds of verification', tone: 'busy' }
      : { text: 'None until the domain is verified', tone: 'idle' };
  }
  switch (c.status) {
    case 'issued': {
      const until = c.expires_at ? `, valid until ${day(c.expires_at)}` : '';
      const renews = c.renews_after ? `, renewed after ${day(c.renews_after)}` : '';
      return { text: `Served over HTTPS${until}${renews}`, tone: 'ok' };
    }
    case 'pending':
      return { text: `Being ordered${c.reason ? `: ${c.reason}` : ''}`, tone: 'busy' };
    case 'failed': {
      const retry = c.retry_after ? ` (tried again after ${day(c.retry_after)})` : '';
      return { text: `Failed${c.reason ? `: ${c.reason}` : ''}${retry}`, tone: 'bad' };
    }
  }
}

const isoDay = (iso: string) => iso.slice(0, 10);

const purposeWords: Record<RecordFacts['purpose'], string> = {
  ownership: 'proves the name is yours',
  routing: 'sends its traffic to the app',
  certificate: 'lets the platform validate its wildcard certificate',
};

/** What the last check saw of a record, in words. */
export function recordCheckInWords(r: Pick<RecordFacts, 'ok' | 'observed'>): { text: string; tone: Tone } {
  if (r.ok === null) return { text: 'Not checked yet', tone: 'idle' };
  if (r.ok) return { text: 'Right', tone: 'ok' };
  return r.observed && r.observed.length > 0
    ? { text: `Wrong: DNS answers ${r.observed.join(', ')}`, tone: 'bad' }
    : { text: 'Missing: DNS answers nothing', tone: 'bad' };
}

export interface RecordRow {
  type: RecordFacts['type'];
  /** The fully qualified name, exactly as the API gives it. */
  name: string;
  /** The value to publish, exactly (what the copy button copies). */
  value: string;
  purpose: string;
  check: { text: string; tone: Tone };
  /** A stable key and element id part: type and name. */
  key: string;
}

/** The records to publish, each with its purpose and last check in words, in the API's order. */
export function recordRows(d: Pick<DomainFacts, 'records'>): RecordRow[] {
  return d.records.map((r, i) => ({
    type: r.type,
    name: r.name,
    value: r.value,
    purpose: purposeWords[r.purpose] ?? r.purpose,
    check: recordCheckInWords(r),
    key: `${i}-${r.type}-${r.name}`.replace(/[^A-Za-z0-9_-]/g, '_'),
  }));
}

/** The records as a zone file's lines (what a copy of every record gives): `name. IN TYPE value`, a TXT value quoted. */
export function zoneLines(d: Pick<DomainFacts, 'records'>): string {
  return d.records
    .map((r) => {
      const value = r.type === 'TXT' ? `"${r.value.replace(/(["\\])/g, '\\$1')}"` : r.type === 'CNAME' ? `${r.value}.` : r.value;
      return `${r.name}. 300 IN ${r.type} ${value}`;
    })
    .join('\n');
}

/** Where a domain name entered in the form is obviously not one, before asking the API (which says more). */
export function domainInputProblem(text: string): string | undefined {
  const name = text.trim();
  if (!name) return 'Enter a domain name, such as shop.example.com.';
  if (/^[a-z]+:\/\//i.test(name) || name.includes('/')) return 'Enter the name only, without http:// or a path.';
  if (/\s/.test(name)) return 'A domain name has no spaces.';
  return undefined;
}

/** Bytes in words, binary units as the CLI prints them: `1 GiB`, `39.8 MiB`, `512 B`. */
export function bytesInWords(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  if (i === 0) return `${n} B`;
  const shown = v < 10 ? Math.round(v * 10) / 10 : Math.round(v);
  return `${shown} ${units[i]}`;
}

/** How full: `40 MiB of 1 GiB used (4%)`, or the size alone until it is measured. */
export function usageInWords(used: number | null, size: number): string {
  if (used === null) return `${bytesInWords(size)}, not measured yet`;
  const pct = size > 0 ? Math.round((used / size) * 100) : 0;
  return `${bytesInWords(used)} of ${bytesInWords(size)} used (${pct}%)`;
}

/** The sizes the create form offers (the API takes 128 MiB to 1 TiB; default 1 GiB). */
export const databaseSizes: ReadonlyArray<{ bytes: number; label: string }> = [
  { bytes: 256 * 1024 ** 2, label: '256 MiB' },
  { bytes: 512 * 1024 ** 2, label: '512 MiB' },
  { bytes: 1024 ** 3, label: '1 GiB (the default)' },
  { bytes: 2 * 1024 ** 3, label: '2 GiB' },
  { bytes: 5 * 1024 ** 3, label: '5 GiB' },
  { bytes: 10 * 1024 ** 3, label: '10 GiB' },
];

/** What these functions read of a database (GET /databases; docs/api/data.md). */
export interface DatabaseFacts {
  name: string;
  phase: 'Pending' | 'Ready' | 'Deleting' | 'Failed';
  message: string | null;
  attached_to: string | null;
  deletion_policy: 'drop' | 'retain';
}

/** A database's phase in words, with its message when it says why. */
export function databasePhaseInWords(d: Pick<DatabaseFacts, 'phase' | 'message'>): { text: string; tone: Tone } {
  const why = d.message ? `: ${d.message}` : '';
  switch (d.phase) {
    case 'Pending':
      return { text: `Starting${why}`, tone: 'busy' };
    case 'Ready':
      return { text: 'Ready', tone: 'ok' };
    case 'Deleting':
      return { text: 'Being deleted', tone: 'idle' };
    case 'Failed':
      return { text: `Failed${why}`, tone: 'bad' };
  }
}

/** What deleting it does to its data, in words. */
export function deletionInWords(policy: DatabaseFacts['deletion_policy']): string {
  return policy === 'retain'
    ? 'its volume and credentials are kept: a database made again with this name takes them up'
    : 'its data is deleted with it';
}

/** Whether it may be deleted now, and if not why (the API refuses an attached one with 409). */
export function databaseDeletable(d: Pick<DatabaseFacts, 'attached_to' | 'phase'>): { ok: boolean; why?: string } {
  if (d.phase === 'Deleting') return { ok: false, why: 'already being deleted' };
  if (d.attached_to) return { ok: false, why: `detach it from ${d.attached_to} first` };
  return { ok: true };
}

/** What these functions read of a volume (GET /volumes). */
export interface VolumeFacts {
  ref: string;
  kind: 'machine' | 'database';
  app: string | null;
  service: string | null;
  machine: number | null;
  volume: string | null;
  database: string | null;
  attached: boolean;
  mounted_by: string | null;
}

/** Whose volume it is, in words: `machine 0 of shop (volume data)`, `database orders`. */
export function volumeOwnerInWords(v: VolumeFacts): string {
  if (v.kind === 'database') return `database ${v.database ?? 'unknown'}`;
  const service = v.service ? `, service ${v.service}` : '';
  const volume = v.volume ? ` (volume ${v.volume})` : '';
  return `machine ${v.machine ?? '?'} of ${v.app ?? 'an app'}${service}${volume}`;
}

/** Whether it is in use, in words; and whether it may be deleted (the API refuses one attached with 409). */
export function volumeStateInWords(v: VolumeFacts): { text: string; tone: Tone; deletable: boolean } {
  if (v.kind === 'database')
    return v.attached
      ? { text: 'In use by its database (deleted with it)', tone: 'ok', deletable: false }
      : { text: 'Kept after its database was deleted', tone: 'idle', deletable: true };
  if (v.mounted_by) return { text: `Mounted by ${v.mounted_by}`, tone: 'ok', deletable: false };
  if (v.attached) return { text: 'Declared by its app', tone: 'busy', deletable: false };
  return { text: 'Detached: its app no longer declares it', tone: 'idle', deletable: true };
}
