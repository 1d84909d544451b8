// What a sandbox's agent answers is tenant input: the agent runs in the tenant's pod, as the
// tenant's user, and code that took it over can answer anything (issue 30: a forged 64 MiB reply
// tripled the API's memory; 4 MiB of output came back for a cap of 1 KiB). So every answer is
// bounded before it is parsed, checked against its shape, and held to the limits the API itself
// asked for: output past the request's cap is cut here, whatever the agent says it did.
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { z } from 'zod';
import type { ExecEvent, ExecResult } from '../../lib/sandbox/exec.js';

/** Thrown when an answer breaks its bounds or its shape; the API answers 502 with the message. */
export class AgentReplyError extends Error {}

/** An error answer, an upload's answer: short by nature. */
export const smallReplyBytes = 64 * 1024;

/**
 * The most an exec's JSON result may take for a cap of `maxOutputBytes` per stream: JSON escapes
 * a byte into at most six characters (`\u0000`), two streams, and the fields around them.
 */
export function execReplyBytes(maxOutputBytes: number): number {
  return 2 * 6 * maxOutputBytes + smallReplyBytes;
}

/** Reads a whole answer of at most `limit` bytes; past it the connection is cut and nothing is kept. */
export async function readBounded(res: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    res.destroy();
    throw new AgentReplyError(`the sandbox agent answered ${declared} bytes (at most ${limit} are read)`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      res.destroy();
      throw new AgentReplyError(`the sandbox agent answered more than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const short = z.string().max(4096);
const exitFields = {
  status: z.enum(['ok', 'timed_out', 'failed']),
  exit_code: z.number().int().min(-1024).max(1024).nullable(),
  signal: z.string().max(32).nullable(),
  reason: short.nullable(),
  truncated: z.object({ stdout: z.boolean(), stderr: z.boolean() }),
  bytes: z.object({ stdout: count, stderr: count }),
  duration_ms: count,
};
const resultSchema = z.object({ ...exitFields, stdout: z.string(), stderr: z.string() });
const eventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('stdout'), data: z.string() }),
  z.object({ type: z.literal('stderr'), data: z.string() }),
  z.object({ type: z.literal('exit'), ...exitFields }),
]);

/** `text` cut to at most `max` bytes of UTF-8, never inside a character. */
export function cutUtf8(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back to a character's first byte
  return bytes.subarray(0, end).toString('utf8');
}

/** The output kept of one stream, held to the cap. */
class Kept {
  bytes = 0;
  cut = false;
  constructor(private readonly cap: number) {}
  take(data: string): string {
    const part = cutUtf8(data, this.cap - this.bytes);
    const n = Buffer.byteLength(part);
    if (n < Buffer.byteLength(data)) this.cut = true;
    this.bytes += n;
    return part;
  }
}

function describe(err: z.ZodError): string {
  return err.issues
    .slice(0, 2)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

/** An exec's JSON result, checked and held to `maxOutputBytes` per stream. */
export function checkExecResult(body: Buffer, maxOutputBytes: number): ExecResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new AgentReplyError('the sandbox agent answered something that is not JSON');
  }
  const r = resultSchema.safeParse(parsed);
  if (!r.success) throw new AgentReplyError(`the sandbox agent answered an exec result of the wrong shape (${describe(r.error)})`);
  const out = new Kept(maxOutputBytes);
  const err = new Kept(maxOutputBytes);
  const stdout = out.take(r.data.stdout);
  const stderr = err.take(r.data.stderr);
  return {
    ...r.data,
    stdout,
    stderr,
    truncated: { stdout: r.data.truncated.stdout || out.cut, stderr: r.data.truncated.stderr || err.cut },
    // What it says it produced, but never less than what came.
    bytes: {
      stdout: Math.max(r.data.bytes.stdout, Buffer.byteLength(r.data.stdout)),
      stderr: Math.max(r.data.bytes.stderr, Buffer.byteLength(r.data.stderr)),
    },
  };
}

/**
 * A streamed exec's NDJSON, re-made line by line: each line at most `execReplyBytes` long and of a
 * known shape, output held to the cap per stream, nothing after the exit line. A line that breaks
 * that ends the stream with an exit line of status `failed` saying so; the agent's connection is cut.
 */
export function boundedExecStream(maxOutputBytes: number, onBroken: () => void): Transform {
  const lineLimit = execReplyBytes(maxOutputBytes);
  const kept = { stdout: new Kept(maxOutputBytes), stderr: new Kept(maxOutputBytes) };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let done = false;
  const started = Date.now();
  const brokenExit = (why: string): string =>
    `${JSON.stringify({
      type: 'exit',
      status: 'failed',
      exit_code: null,
      signal: null,
      reason: `the sandbox agent's stream broke its bounds: ${why}`,
      truncated: { stdout: kept.stdout.cut, stderr: kept.stderr.cut },
      bytes: { stdout: kept.stdout.bytes, stderr: kept.stderr.bytes },
      duration_ms: Date.now() - started,
    })}\n`;
  const line = (raw: Buffer, push: (s: string) => void): void => {
    if (done || raw.length === 0) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      return broken('a line is not JSON', push);
    }
    const e = eventSchema.safeParse(parsed);
    if (!e.success) return broken(`a line of the wrong shape (${describe(e.error)})`, push);
    const ev: ExecEvent = e.data;
    if (ev.type === 'exit') {
      done = true;
      const truncated = { stdout: ev.truncated.stdout || kept.stdout.cut, stderr: ev.truncated.stderr || kept.stderr.cut };
      const bytes = { stdout: Math.max(ev.bytes.stdout, kept.stdout.bytes), stderr: Math.max(ev.bytes.stderr, kept.stderr.bytes) };
      return push(`${JSON.stringify({ ...ev, truncated, bytes })}\n`);
    }
    const data = kept[ev.type].take(ev.data);
    if (data) push(`${JSON.stringify({ type: ev.type, data })}\n`);
  };
  const broken = (why: string, push: (s: string) => void): void => {
    done = true;
    push(brokenExit(why));
    onBroken();
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      const push = (s: string) => void this.push(s);
      let from = 0;
      for (let nl = chunk.indexOf(0x0a); nl !== -1 && !done; nl = chunk.indexOf(0x0a, from)) {
        pending.push(chunk.subarray(from, nl));
        line(Buffer.concat(pending), push);
        pending = [];
        pendingBytes = 0;
        from = nl + 1;
      }
      if (!done && from < chunk.length) {
        pending.push(chunk.subarray(from));
        pendingBytes += chunk.length - from;
        if (pendingBytes > lineLimit) broken(`a line longer than ${lineLimit} bytes`, push);
      }
      cb();
    },
    flush(cb: TransformCallback) {
      const push = (s: string) => void this.push(s);
      if (!done && pendingBytes) line(Buffer.concat(pending), push);
      if (!done) broken('it ended without an exit line', push);
      cb();
    },
  });
}
