// Container logs, kept per container and restart in the CRI line format the kubelet uses
// (`<RFC3339Nano> stdout|stderr F <line>`), capped in size by rotating the current file once.
// Followers of a running container get new lines as they are written.
import { EventEmitter } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export interface LogLine {
  time: Date;
  stream: 'stdout' | 'stderr';
  text: string;
}

export function formatLine(l: LogLine): string {
  return `${l.time.toISOString()} ${l.stream} F ${l.text}\n`;
}

export function parseLine(raw: string): LogLine | undefined {
  const m = /^(\S+) (stdout|stderr) [FP] (.*)$/.exec(raw);
  if (!m) return undefined;
  return { time: new Date(m[1]!), stream: m[2] as 'stdout' | 'stderr', text: m[3]! };
}

const maxRecentLines = 5000;

/**
 * The log of one container instance (one restart). Lines are written synchronously, so the file
 * always holds every line already announced to followers, and rotation never races a pending write.
 */
export class ContainerLog extends EventEmitter {
  private fd: number;
  private size: number;
  private partial = { stdout: '', stderr: '' };
  closed = false;
  /** The latest lines, for followers: a snapshot and a subscription taken in one tick miss nothing. */
  readonly recent: LogLine[] = [];
  /** Whether `recent` lost older lines (then the file has them). */
  truncated = false;

  constructor(
    readonly file: string,
    private readonly maxBytes: number,
  ) {
    super();
    mkdirSync(path.dirname(file), { recursive: true });
    this.size = existsSync(file) ? statSync(file).size : 0;
    this.fd = openSync(file, 'a');
  }

  write(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const text = this.partial[stream] + chunk.toString('utf8');
    const lines = text.split('\n');
    this.partial[stream] = lines.pop()!;
    for (const line of lines) this.append({ time: new Date(), stream, text: line });
  }

  /** Flushes partial lines and stops accepting output. */
  close(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream]) this.append({ time: new Date(), stream, text: this.partial[stream] });
      this.partial[stream] = '';
    }
    this.closed = true;
    closeSync(this.fd);
    this.emit('close');
  }

  private append(line: LogLine): void {
    const data = formatLine(line);
    const bytes = Buffer.from(data, 'utf8');
    if (this.size + bytes.length > this.maxBytes) this.rotate();
    writeSync(this.fd, bytes);
    this.size += bytes.length;
    this.recent.push(line);
    if (this.recent.length > maxRecentLines) {
      this.recent.shift();
      this.truncated = true;
    }
    this.emit('line', line);
  }

  private rotate(): void {
    closeSync(this.fd);
    renameSync(this.file, `${this.file}.1`);
    this.fd = openSync(this.file, 'a');
    this.size = 0;
  }
}

/** Every line of a container instance's log on disk, oldest first (the rotated part, then the current). */
export async function readLog(file: string): Promise<LogLine[]> {
  const parts = await Promise.all([`${file}.1`, file].map((f) => readFile(f, 'utf8').catch(() => '')));
  return parts
    .join('')
    .split('\n')
    .map(parseLine)
    .filter((l): l is LogLine => l !== undefined);
}
