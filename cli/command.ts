// What every `svc` command group on the typed client (cli/apps.ts, cli/env.ts, ...) is made of: its
// usage with an example, its run over parsed arguments, and the context it runs in, so a group
// can be run against a fake API in a test exactly as svc.ts runs it for a person.
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import type { Writable } from 'node:stream';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createApiClient, type ApiClient } from '../lib/client/index.js';
import { UsageError } from './token-commands.js';

/** Where the API is ($SVC_API_URL or svc login's, the root: https://api.example.com/api) and the token to send. */
export interface ApiTarget {
  apiUrl: string;
  token: string;
}

/** A wrong use of one group: svc prints the group's usage, not the whole list, and exits 2. */
export class GroupUsageError extends UsageError {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

/** Where a command reads and writes: stdout is for what a program reads (--json), stderr for people. */
export interface CommandContext {
  out(line: string): void;
  /** Progress, prompts and notices. */
  err(line: string): void;
  /** Writes to stdout as it comes (a raw body, a followed log), no newline added. */
  write(text: string): void;
  /** Writes to stderr as it comes (a sandboxed command's own stderr), no newline added. */
  writeErr(text: string): void;
  /** Stdout for bytes that are not text (a file read out of a sandbox), piped as they come. */
  stdout: Writable;
  /** Standard input as text (`-` for a file). */
  readStdin(): Promise<string>;
  /** Whether someone is at a terminal to answer a question. */
  interactive: boolean;
  /** Asks on stderr; the line typed. */
  ask(question: string): Promise<string>;
  /** Where the API is and the token to send (--token, else $SVC_TOKEN, else svc login's: cli/config.ts resolveTarget). */
  target(token: string | undefined): ApiTarget;
  /** Waits before a reconnect (tests shorten it). */
  sleep(ms: number): Promise<void>;
}

export interface CommandGroup {
  name: string;
  /** The group's lines in `svc --help`: each form and what it does. */
  synopsis: string;
  /** `svc GROUP --help`: every form, its options, and an example. */
  usage: string;
  run(args: string[], ctx: CommandContext): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Every group takes these: --help, and --token instead of $SVC_TOKEN. */
const common = { help: { type: 'boolean', short: 'h' }, token: { type: 'string' } } as const satisfies Options;

/**
 * A group's arguments parsed: unknown options and missing values are usage errors naming the
 * group's usage. `help` is true for --help (and for no subcommand at all).
 */
export function parseGroupArgs<O extends Options>(group: Pick<CommandGroup, 'usage'>, args: string[], options: O) {
  try {
    return parseArgs({ args, options: { ...common, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new GroupUsageError(err instanceof Error ? err.message : String(err), group.usage);
  }
}

/** `svc GROUP --help` prints the usage to stdout and succeeds. */
export function printUsage(group: Pick<CommandGroup, 'usage'>, ctx: Pick<CommandContext, 'out'>): number {
  ctx.out(group.usage);
  return 0;
}

/** The typed client for a group's call, with the token given, else $SVC_TOKEN, else svc login's. */
export function connect(ctx: Pick<CommandContext, 'target'>, token: string | undefined): ApiClient {
  const t = ctx.target(token);
  return createApiClient({ baseUrl: t.apiUrl, token: t.token });
}

/**
 * Asks before something that cannot be undone. With --yes it goes ahead; without a terminal to
 * ask at, it refuses (a script must say --yes); otherwise only "y" or "yes" goes ahead.
 */
export async function confirm(ctx: CommandContext, question: string, yes: boolean): Promise<boolean> {
  if (yes) return true;
  // A usage error without the usage: the one thing to add is said.
  if (!ctx.interactive) throw new GroupUsageError('not a terminal to ask at: add --yes to go ahead without being asked', '');
  const answer = await ctx.ask(`${question} [y/N] `);
  return /^y(es)?$/i.test(answer.trim());
}

/** Prints the API's JSON as it came with --json, else the lines a person reads. */
export function show<T>(ctx: Pick<CommandContext, 'out'>, json: boolean, answer: T, lines: (answer: T) => string[]): void {
  if (json) ctx.out(JSON.stringify(answer));
  else lines(answer).forEach((l) => ctx.out(l));
}

/** Comma-separated values of an option, none empty: `--apps a,b`. */
export function listOption(value: string | undefined, flag: string, usage: string): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(',').map((v) => v.trim());
  if (items.some((v) => !v)) throw new GroupUsageError(`${flag} takes a comma-separated list`, usage);
  return items;
}

/** A file's text, or standard input's for `-`; one that cannot be read is said in words. */
export async function readInput(ctx: Pick<CommandContext, 'readStdin'>, file: string): Promise<string> {
  if (file === '-') return ctx.readStdin();
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : err instanceof Error ? err.message : String(err);
    throw new Error(`cannot read ${file}: ${why}`, { cause: err });
  }
}

/**
 * A line as a terminal shows it, control characters written out (`\x1b`): what the API says (its
 * messages, names, addresses) could otherwise move the cursor, rewrite a line with a carriage
 * return or set the window's title — a hostile --api could make a prompt say anything.
 */
export function printable(line: string): string {
  return line.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The context of a person at a terminal, or a script: process's stdin, stdout and stderr. */
export function processContext(target: (token: string | undefined) => ApiTarget): CommandContext {
  return {
    // What people read is printable; what a program reads on a pipe (--json, a table) is as it is.
    out: (line) => console.log(process.stdout.isTTY ? printable(line) : line),
    err: (line) => console.error(printable(line)),
    write: (text) => void process.stdout.write(text),
    writeErr: (text) => void process.stderr.write(text),
    stdout: process.stdout,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
    ask: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await rl.question(printable(question));
      } finally {
        rl.close();
      }
    },
    target,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}

/** A positive number of seconds of an option (`--timeout 30`); undefined when it is not given. */
export function secondsOption(value: string | undefined, flag: string, usage: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new GroupUsageError(`${flag} is a number of seconds`, usage);
  return n;
}
