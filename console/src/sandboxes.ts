// The sandboxes, builds and import pages, the pure parts: a sandbox's state in words, which ones
// commands can still run in, a command's output as POST /sandboxes/{id}/exec streams it (NDJSON:
// stdout and stderr chunks, then an exit line; docs/api/sandboxes.md) put together and kept to its
// newest part, its end in words (with the exit code `svc sandbox exec` would exit with), an app's
// builds newest first with their source in words, and the Git repositories the builds came from
// (the API keeps no list of imports: an imported app's builds name its repository, branch and
// commit). No DOM: unit-tested (test/unit/console-sandboxes.test.ts).
import type { Tone } from './status.js';

/** What these functions read of a sandbox (GET /sandboxes, GET /sandboxes/{id}). */
export interface SandboxFacts {
  id: string;
  state: 'pending' | 'ready' | 'ended' | 'failed';
  reason: string | null;
  message: string | null;
  launch: 'warm' | 'cold' | null;
  created_at: string | null;
}

/** Whether commands can run in it: pending or ready (an ended or failed one answers 409). */
export function sandboxOpen(s: Pick<SandboxFacts, 'state'>): boolean {
  return s.state === 'pending' || s.state === 'ready';
}

const endings: Record<string, string> = {
  Deleted: 'deleted',
  IdleTimeout: 'idle for too long',
  Expired: 'its lifetime ended',
  PodFailed: 'its pod failed',
  PodGone: 'its pod was deleted',
  StartTimeout: 'it did not start in time',
};

/** A sandbox's state in words, with the API's message when it has one. */
export function sandboxStateInWords(s: Pick<SandboxFacts, 'state' | 'reason' | 'message' | 'launch'>): { text: string; tone: Tone } {
  const why = s.message ?? (s.reason ? (endings[s.reason] ?? s.reason) : '');
  switch (s.state) {
    case 'pending':
      return { text: 'Starting', tone: 'busy' };
    case 'ready':
      return { text: s.launch ? `Ready (${s.launch} launch)` : 'Ready', tone: 'ok' };
    case 'ended':
      return { text: why ? `Ended: ${why}` : 'Ended', tone: 'idle' };
    case 'failed':
      return { text: why ? `Failed: ${why}` : 'Failed', tone: 'bad' };
  }
}

/** Sandboxes as the list shows them: open ones first, then newest first. */
export function sortSandboxes<S extends Pick<SandboxFacts, 'id' | 'state' | 'created_at'>>(list: readonly S[]): S[] {
  const time = (s: S) => (s.created_at ? Date.parse(s.created_at) || 0 : 0);
  return [...list].sort(
    (a, b) => Number(sandboxOpen(b)) - Number(sandboxOpen(a)) || time(b) - time(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
  );
}

/** A resource in words: `512Mi` → `512 MiB`, `1` (CPU) → `1 CPU`. */
export function resourcesInWords(r: { cpu: string; memory: string; disk: string }): string {
  const bytes = (v: string) => v.replace(/^(\d+(?:\.\d+)?)([KMGT])i$/, '$1 $2iB');
  return `${r.cpu} CPU, ${bytes(r.memory)} memory, ${bytes(r.disk)} disk`;
}

/** The exit line of a streamed exec: the result's fields but the output. */
export interface ExecEnd {
  status: 'ok' | 'timed_out' | 'failed';
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  truncated: { stdout: boolean; stderr: boolean };
  bytes: { stdout: number; stderr: number };
  duration_ms: number;
}

/** One stretch of output, from one stream. */
export interface OutputPart {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** A run's output as it comes: the parts (consecutive chunks of one stream joined), the end once it came. */
export interface RunOutput {
  parts: OutputPart[];
  /** Characters of output no longer shown (the oldest). */
  dropped: number;
  /** A line not ended yet (a chunk of the stream cut mid-line). */
  rest: string;
  end?: ExecEnd;
  /** Lines of the stream that were not the API's (a proxy's page in a 200): said, not shown as output. */
  garbled: number;
}

export const emptyRun: RunOutput = { parts: [], dropped: 0, rest: '', garbled: 0 };

/** The most output a run keeps (the API keeps 1 MiB per stream). */
export const maxRunChars = 500_000;

/** Output added: joined to the last part when it is of the same stream; past `max`, the oldest goes. */
export function addOutput(run: RunOutput, part: OutputPart, max = maxRunChars): RunOutput {
  if (!part.text) return run;
  const last = run.parts[run.parts.length - 1];
  let parts =
    last && last.stream === part.stream
      ? [...run.parts.slice(0, -1), { stream: part.stream, text: last.text + part.text }]
      : [...run.parts, { ...part }];
  let total = parts.reduce((n, p) => n + p.text.length, 0);
  let dropped = run.dropped;
  while (total > max && parts.length > 0) {
    const first = parts[0]!;
    const over = total - max;
    if (first.text.length <= over) {
      parts = parts.slice(1);
      total -= first.text.length;
      dropped += first.text.length;
    } else {
      parts = [{ stream: first.stream, text: first.text.slice(over) }, ...parts.slice(1)];
      total -= over;
      dropped += over;
    }
  }
  return { ...run, parts, dropped };
}

/** One NDJSON line of the stream applied. */
function applyLine(run: RunOutput, line: string, max: number): RunOutput {
  if (!line.trim()) return run;
  let e: unknown;
  try {
    e = JSON.parse(line);
  } catch {
    return { ...run, garbled: run.garbled + 1 };
  }
  const v = e as { type?: unknown; data?: unknown } | null;
  if (v && (v.type === 'stdout' || v.type === 'stderr') && typeof v.data === 'string')
    return addOutput(run, { stream: v.type, text: v.data }, max);
  if (v && v.type === 'exit') {
    const { type: _type, ...end } = v as ExecEnd & { type: string };
    return { ...run, end };
  }
  return { ...run, garbled: run.garbled + 1 };
}

/** A chunk of the NDJSON stream read: whole lines applied, the rest kept for the next chunk. */
export function feedRun(run: RunOutput, chunk: string, max = maxRunChars): RunOutput {
  let text = run.rest + chunk;
  let next: RunOutput = { ...run, rest: '' };
  let nl: number;
  while ((nl = text.indexOf('\n')) >= 0) {
    next = applyLine(next, text.slice(0, nl), max);
    text = text.slice(nl + 1);
  }
  return { ...next, rest: text };
}

/** The stream ended: a last line with no newline applied. */
export function endRun(run: RunOutput, max = maxRunChars): RunOutput {
  return run.rest ? { ...applyLine(run, run.rest, max), rest: '' } : run;
}

/** A whole (not streamed) answer as a run, for an API that answered JSON anyway. */
export function runOfResult(r: ExecEnd & { stdout: string; stderr: string }, max = maxRunChars): RunOutput {
  const { stdout, stderr, ...end } = r;
  let run = addOutput(emptyRun, { stream: 'stdout', text: stdout }, max);
  run = addOutput(run, { stream: 'stderr', text: stderr }, max);
  return { ...run, end };
}

/** The exit code `svc sandbox exec` exits with (cli/sandbox.ts): the command's own, 124 at its timeout, 128 + N for signal N. */
export function exitCodeOf(r: Pick<ExecEnd, 'status' | 'exit_code' | 'signal'>): number {
  if (r.status === 'ok') return r.exit_code ?? 0;
  if (r.status === 'timed_out') return 124;
  return r.exit_code ?? 127;
}

/** How a run ended, in words. */
export function runEndInWords(end: ExecEnd): { text: string; tone: Tone } {
  const took = end.duration_ms < 1000 ? `${end.duration_ms} ms` : `${(end.duration_ms / 1000).toFixed(1)} s`;
  const cut =
    end.truncated.stdout || end.truncated.stderr
      ? `; output cut (stdout ${end.bytes.stdout.toLocaleString('en')} bytes, stderr ${end.bytes.stderr.toLocaleString('en')} bytes produced)`
      : '';
  switch (end.status) {
    case 'ok':
      return { text: `Exit code ${end.exit_code ?? 0}, in ${took}${cut}`, tone: (end.exit_code ?? 0) === 0 ? 'ok' : 'bad' };
    case 'timed_out':
      return { text: `Timed out${end.reason ? `: ${end.reason}` : ''} (exit code 124)${cut}`, tone: 'bad' };
    case 'failed':
      return {
        text: `Failed${end.reason ? `: ${end.reason}` : ''}${end.signal ? ` (${end.signal})` : ''} (exit code ${exitCodeOf(end)})${cut}`,
        tone: 'bad',
      };
  }
}

/** What these functions read of a build (GET /apps/{appID}/builds). */
export interface BuildFacts {
  id: string;
  status: string;
  created_at: string;
  source: { type: 'upload'; digest: string } | { type: 'git'; url: string; ref: string | null; commit: string | null; path: string | null };
}

/** Builds newest first (the API's order; said again so a merged or refreshed list keeps it). */
export function sortBuilds<B extends Pick<BuildFacts, 'id' | 'created_at'>>(builds: readonly B[]): B[] {
  return [...builds].sort(
    (a, b) => (Date.parse(b.created_at) || 0) - (Date.parse(a.created_at) || 0) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
  );
}

const short = (s: string, n = 12) => (s.length > n ? s.slice(0, n) : s);

/** Where a build's source came from, in words. */
export function buildSourceInWords(b: Pick<BuildFacts, 'source'>): string {
  const s = b.source;
  if (s.type === 'upload') return `an upload (${short(s.digest.replace(/^sha256:/, ''))})`;
  const at = [s.ref ? `branch ${s.ref}` : '', s.commit ? `commit ${short(s.commit)}` : ''].filter(Boolean).join(', ');
  return `${s.url}${s.path ? ` (${s.path})` : ''}${at ? `, ${at}` : ''}`;
}

/** A Git repository an app's builds came from: its branch, and the newest build of it (the last sync seen). */
export interface RepositorySeen {
  url: string;
  ref: string | null;
  path: string | null;
  commit: string | null;
  /** When the newest build of it was made. */
  at: string;
  build: string;
  status: string;
}

/** The app's Git repositories and branches, from its builds (newest first), each once with its newest build. */
export function repositoriesOf(builds: readonly BuildFacts[]): RepositorySeen[] {
  const seen = new Map<string, RepositorySeen>();
  for (const b of sortBuilds(builds)) {
    if (b.source.type !== 'git') continue;
    const key = JSON.stringify([b.source.url, b.source.ref, b.source.path]);
    if (seen.has(key)) continue;
    seen.set(key, {
      url: b.source.url,
      ref: b.source.ref,
      path: b.source.path,
      commit: b.source.commit,
      at: b.created_at,
      build: b.id,
      status: b.status,
    });
  }
  return [...seen.values()];
}

/**
 * The repository an import names, checked in the page before it is sent: a URL of https (or http,
 * which the API takes only on a platform that allows private addresses: it has the last word).
 */
export function repositoryProblem(url: string): string | undefined {
  const u = url.trim();
  if (!u) return 'name the repository (an https URL)';
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return `${u} is not a URL: give the repository's https address, as git clone takes it`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return `the repository must be an https URL (not ${parsed.protocol.replace(/:$/, '')})`;
  return undefined;
}
