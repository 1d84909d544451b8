// `svc sandbox open|exec|put|get|rm|ls` and `svc eval`: the sandboxes API from a terminal. Output
// of exec and eval streams as it comes (NDJSON from the API), and the command's exit code is svc's:
// the program's own when it exited, 124 when it was killed at its timeout (as timeout(1) says),
// 128 + the signal when a signal killed it (137 for out of memory), 127 when it could not start.
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants } from 'node:os';
import { callJson, request, type ApiTarget } from './api.js';
import { table } from './table.js';

export interface SandboxRecord {
  id: string;
  runtime: string;
  network: boolean;
  state: string;
  reason: string | null;
  message: string | null;
  launch: string | null;
  launch_reason: string | null;
  created_at: string | null;
  idle_expires_at: string | null;
  expires_at: string | null;
  ended_at: string | null;
}

interface ExitLine {
  type: 'exit';
  status: 'ok' | 'timed_out' | 'failed';
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  truncated: { stdout: boolean; stderr: boolean };
  bytes: { stdout: number; stderr: number };
  duration_ms: number;
}

export interface Io {
  stdout: Writable;
  stderr: Writable;
}

/** svc's exit code for an exec's end (the file's header). */
export function exitCodeOf(r: Pick<ExitLine, 'status' | 'exit_code' | 'signal'>): number {
  if (r.status === 'timed_out') return 124;
  if (r.status === 'ok') return r.exit_code ?? 0;
  if (r.signal) return 128 + ((constants.signals as Record<string, number>)[r.signal] ?? 0);
  return r.exit_code ?? 127;
}

export async function openSandbox(
  t: ApiTarget,
  o: { runtime?: string | undefined; network?: boolean | undefined; idle?: number | undefined; lifetime?: number | undefined },
): Promise<SandboxRecord> {
  return callJson<SandboxRecord>(t, 'POST', '/sandboxes', {
    ...(o.runtime ? { runtime: o.runtime } : {}),
    ...(o.network ? { network: true } : {}),
    ...(o.idle !== undefined ? { idle_timeout_seconds: o.idle } : {}),
    ...(o.lifetime !== undefined ? { max_lifetime_seconds: o.lifetime } : {}),
  });
}

export function describe(s: SandboxRecord): string {
  const why = s.reason ? ` (${s.reason}${s.message ? `: ${s.message}` : ''})` : '';
  return `${s.id}  ${s.state}${why}  ${s.runtime}${s.network ? ' network' : ''}  launch ${s.launch ?? '-'}${s.launch_reason ? ` (${s.launch_reason})` : ''}`;
}

export function sandboxTable(list: SandboxRecord[]): string {
  return table([
    ['ID', 'STATE', 'REASON', 'RUNTIME', 'NETWORK', 'LAUNCH', 'CREATED', 'EXPIRES'],
    ...list.map((s) => [
      s.id,
      s.state,
      s.reason ?? '',
      s.runtime,
      s.network ? 'on' : 'off',
      s.launch ?? '',
      s.created_at ?? '',
      s.ended_at ? `ended ${s.ended_at}` : (s.expires_at ?? ''),
    ]),
  ]).join('\n');
}

/**
 * Sends an exec (or eval) asking for NDJSON, writes output to the terminal as it comes, and
 * answers svc's exit code. Truncation and non-ok ends are said on stderr.
 */
export async function streamExec(t: ApiTarget, path: string, body: Record<string, unknown>, io: Io): Promise<number> {
  const res = await request(t, 'POST', path, { json: { ...body, stream: true }, headers: { accept: 'application/x-ndjson' } });
  let exit: ExitLine | undefined;
  let rest = '';
  for await (const chunk of Readable.fromWeb(res.body as import('node:stream/web').ReadableStream) as AsyncIterable<Buffer>) {
    rest += chunk.toString('utf8');
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (!line) continue;
      const e = JSON.parse(line) as { type: 'stdout' | 'stderr'; data: string } | ExitLine;
      if (e.type === 'exit') exit = e;
      else (e.type === 'stdout' ? io.stdout : io.stderr).write(e.data);
    }
  }
  if (!exit) throw new Error('the output ended before the command did (the connection was cut)');
  if (exit.truncated.stdout || exit.truncated.stderr) {
    io.stderr.write(`svc: output truncated (stdout ${exit.bytes.stdout} bytes, stderr ${exit.bytes.stderr} bytes produced)\n`);
  }
  if (exit.status !== 'ok') io.stderr.write(`svc: ${exit.status}${exit.reason ? `: ${exit.reason}` : ''}\n`);
  return exitCodeOf(exit);
}

/** The same, answered whole as JSON (--json): printed, and the exit code from it. */
export async function jsonExec(t: ApiTarget, path: string, body: Record<string, unknown>, io: Io): Promise<number> {
  const result = await callJson<ExitLine>(t, 'POST', path, body);
  io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return exitCodeOf(result);
}

/** Eval's code: -c CODE, a file, or "-" for standard input. */
export async function codeOf(o: { code?: string | undefined; file?: string | undefined }): Promise<string> {
  if (o.code !== undefined) return o.code;
  if (o.file === '-') return readFileSync(0, 'utf8');
  if (o.file) return readFile(o.file, 'utf8');
  throw new Error('give the code with -c CODE, or a file (- for standard input)');
}

export async function putFile(t: ApiTarget, id: string, local: string, remote: string): Promise<{ path: string; size: number }> {
  const { size } = await stat(local);
  const res = await request(t, 'PUT', `/sandboxes/${encodeURIComponent(id)}/files?path=${encodeURIComponent(remote)}`, {
    body: Readable.toWeb(createReadStream(local)) as unknown as NonNullable<RequestInit['body']>,
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
  });
  return (await res.json()) as { path: string; size: number };
}

export async function getFile(t: ApiTarget, id: string, remote: string, out: Writable | string): Promise<void> {
  const res = await request(t, 'GET', `/sandboxes/${encodeURIComponent(id)}/files?path=${encodeURIComponent(remote)}`);
  await pipeline(
    Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
    typeof out === 'string' ? createWriteStream(out) : out,
  );
}
