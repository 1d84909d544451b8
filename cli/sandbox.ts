// `svc sandbox open|exec|put|get|rm|ls`: the sandboxes API from a terminal (docs/api/sandboxes.md).
// Output of exec (and of `svc eval`, cli/eval.ts) streams as it comes (NDJSON from the API), and the
// command's exit code is svc's: the program's own when it exited, 124 when it was killed at its
// timeout (as timeout(1) says), 128 + the signal when a signal killed it (137 for out of memory),
// 127 when it could not start.
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { constants } from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { body, sendBytes, type ApiClient, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, secondsOption, type CommandContext, type CommandGroup } from './command.js';
import { table } from './table.js';

/** A sandbox as the API answers it (GET /sandboxes/{sandboxID}). */
export type SandboxBody = paths['/sandboxes/{sandboxID}']['get']['responses'][200]['content']['application/json'];
type ExecAnswer = paths['/sandboxes/{sandboxID}/exec']['post']['responses'][200]['content']['application/json'];
type ExecRequest = NonNullable<paths['/sandboxes/{sandboxID}/exec']['post']['requestBody']>['content']['application/json'];
type EvalRequest = paths['/eval']['post']['requestBody']['content']['application/json'];

/**
 * The last NDJSON line of a streamed exec: the JSON answer's fields but the output, which came in
 * the lines before (the document describes the JSON answer only; docs/api/sandboxes.md the lines).
 */
type ExitLine = { type: 'exit' } & Pick<ExecAnswer, 'status' | 'exit_code' | 'signal' | 'reason' | 'truncated' | 'bytes'>;
type OutputLine = { type: 'stdout' | 'stderr'; data: string };

/** A command to run: in a sandbox that is open, or once in a fresh one (`svc eval`). */
export type ExecCall = { sandbox: string; exec: ExecRequest } | { eval: EvalRequest };

const usage = `usage:
  svc sandbox open [--runtime R] [--network] [--idle SECONDS] [--lifetime SECONDS] [--json]
                                               open a sandbox; its ID alone on stdout, what it is on
                                               stderr; exits 1 when it is not ready
  svc sandbox exec ID [--cwd DIR] [--timeout SECONDS] [--json] (-c 'SHELL COMMAND' | -- PROGRAM ARGS...)
                                               run a command in it; its output streams, and svc exits
                                               with its code (124 timed out, 128+N killed by signal N)
  svc sandbox put ID LOCAL REMOTE              copy a file into the sandbox (REMOTE relative to
                                               /home/app)
  svc sandbox get ID REMOTE [LOCAL]            copy a file out of it (to stdout without LOCAL)
  svc sandbox rm ID [--json]                   destroy it
  svc sandbox ls [--all] [--json]              the open ones (--all: ended ones too, kept 24 h)
  --network     allow outbound connections (default: none at all)
  --json        print the API's answer (exec: the whole result once it ends, output included)
example:
  svc sandbox exec "$(svc sandbox open --runtime python)" -c 'python3 --version'`;

/** svc's exit code for an exec's end (the file's header). */
export function exitCodeOf(r: Pick<ExecAnswer, 'status' | 'exit_code' | 'signal'>): number {
  if (r.status === 'timed_out') return 124;
  if (r.status === 'ok') return r.exit_code ?? 0;
  if (r.signal) return 128 + ((constants.signals as Record<string, number>)[r.signal] ?? 0);
  return r.exit_code ?? 127;
}

export function describe(s: SandboxBody): string {
  const why = s.reason ? ` (${s.reason}${s.message ? `: ${s.message}` : ''})` : '';
  return `${s.id}  ${s.state}${why}  ${s.runtime}${s.network ? ' network' : ''}  launch ${s.launch ?? '-'}${s.launch_reason ? ` (${s.launch_reason})` : ''}`;
}

export function sandboxTable(list: SandboxBody[]): string[] {
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
  ]);
}

/**
 * Runs an exec (or eval) asking for NDJSON, writes its output to stdout and stderr as it comes, and
 * answers svc's exit code; truncation and an end that is not ok are said on stderr. With --json,
 * the whole result once it ends, printed as the API answered it.
 */
export async function runExec(api: ApiClient, ctx: CommandContext, call: ExecCall, json: boolean): Promise<number> {
  if (json) {
    const result =
      'eval' in call
        ? await body(api.POST('/eval', { body: call.eval }))
        : await body(api.POST('/sandboxes/{sandboxID}/exec', { params: { path: { sandboxID: call.sandbox } }, body: call.exec }));
    ctx.out(JSON.stringify(result, null, 2));
    return exitCodeOf(result);
  }
  const streamed = { headers: { accept: 'application/x-ndjson' }, parseAs: 'stream' as const };
  const { data } =
    'eval' in call
      ? await api.POST('/eval', { body: { ...call.eval, stream: true }, ...streamed })
      : await api.POST('/sandboxes/{sandboxID}/exec', {
          params: { path: { sandboxID: call.sandbox } },
          body: { ...call.exec, stream: true },
          ...streamed,
        });
  let exit: ExitLine | undefined;
  let rest = '';
  const lines = data ? (Readable.fromWeb(data as NodeReadableStream<Uint8Array>) as AsyncIterable<Buffer>) : [];
  for await (const chunk of lines) {
    rest += chunk.toString('utf8');
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (!line) continue;
      const e = JSON.parse(line) as OutputLine | ExitLine;
      if (e.type === 'exit') exit = e;
      else if (e.type === 'stdout') ctx.write(e.data);
      else ctx.writeErr(e.data);
    }
  }
  if (!exit) throw new Error('the output ended before the command did (the connection was cut)');
  if (exit.truncated.stdout || exit.truncated.stderr) {
    ctx.err(`svc: output truncated (stdout ${exit.bytes.stdout} bytes, stderr ${exit.bytes.stderr} bytes produced)`);
  }
  if (exit.status !== 'ok') ctx.err(`svc: ${exit.status}${exit.reason ? `: ${exit.reason}` : ''}`);
  return exitCodeOf(exit);
}

export const sandboxGroup: CommandGroup = {
  name: 'sandbox',
  synopsis: `  svc sandbox open [--runtime R] [--network] [--idle SECONDS] [--lifetime SECONDS] [--json]
                                              open a sandbox and print its ID
  svc sandbox exec ID [--cwd DIR] [--timeout SECONDS] [--json] (-c 'SHELL COMMAND' | -- PROGRAM ARGS...)
                                              run a command in it; output streams, svc exits with its
                                              code (124 timed out, 128+N killed by signal N)
  svc sandbox put ID LOCAL REMOTE | get ID REMOTE [LOCAL]
                                              copy a file into or out of a sandbox
  svc sandbox rm ID | ls [--all] [--json]      destroy one; list open ones (--all: ended ones kept 24 h)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      runtime: { type: 'string' },
      network: { type: 'boolean' },
      idle: { type: 'string' },
      lifetime: { type: 'string' },
      json: { type: 'boolean' },
      cwd: { type: 'string' },
      timeout: { type: 'string' },
      c: { type: 'string', short: 'c' },
      all: { type: 'boolean' },
    });
    const [command, id, ...more] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const needId = () => {
      if (!id) throw new GroupUsageError(`name the sandbox: svc sandbox ${command} ID`, usage);
      return { params: { path: { sandboxID: id } } };
    };
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'open': {
        const idle = secondsOption(values.idle, '--idle', usage);
        const lifetime = secondsOption(values.lifetime, '--lifetime', usage);
        const s = await body(
          api().POST('/sandboxes', {
            body: {
              ...(values.runtime ? { runtime: values.runtime } : {}),
              ...(values.network ? { network: true } : {}),
              ...(idle !== undefined ? { idle_timeout_seconds: idle } : {}),
              ...(lifetime !== undefined ? { max_lifetime_seconds: lifetime } : {}),
            },
          }),
        );
        // The ID alone on stdout, to capture; what was opened on stderr.
        ctx.out(json ? JSON.stringify(s, null, 2) : s.id);
        if (!json) ctx.err(describe(s));
        return s.state === 'ready' ? 0 : 1;
      }
      case 'exec': {
        const sandbox = needId().params.path.sandboxID;
        if ((values.c !== undefined) === more.length > 0)
          throw new GroupUsageError("give -c 'SHELL COMMAND' or -- PROGRAM ARGS..., one of them", usage);
        const timeout = secondsOption(values.timeout, '--timeout', usage);
        const exec: ExecRequest = {
          ...(values.c !== undefined ? { command: values.c } : { argv: more }),
          ...(values.cwd ? { cwd: values.cwd } : {}),
          ...(timeout ? { timeout_seconds: timeout } : {}),
        };
        return runExec(api(), ctx, { sandbox, exec }, json);
      }
      case 'put': {
        const [local, remote] = more;
        if (!local || !remote) throw new GroupUsageError('svc sandbox put ID LOCAL REMOTE', usage);
        const { params } = needId();
        const { size } = await stat(local);
        const bytes = Readable.toWeb(createReadStream(local)) as ReadableStream<Uint8Array>;
        const r = await body(
          api().PUT('/sandboxes/{sandboxID}/files', {
            params: { ...params, query: { path: remote } },
            ...sendBytes(bytes, 'application/octet-stream', size),
          }),
        );
        ctx.err(`wrote ${r.size} bytes to ${r.path}`);
        return 0;
      }
      case 'get': {
        const [remote, local] = more;
        if (!remote) throw new GroupUsageError('svc sandbox get ID REMOTE [LOCAL]', usage);
        const { params } = needId();
        const { data } = await api().GET('/sandboxes/{sandboxID}/files', {
          params: { ...params, query: { path: remote } },
          parseAs: 'stream',
        });
        // An empty file comes with no body at all.
        const from = data ? Readable.fromWeb(data as NodeReadableStream<Uint8Array>) : Readable.from([]);
        await pipeline(from, local ? createWriteStream(local) : ctx.stdout);
        return 0;
      }
      case 'rm': {
        const s = await body(api().DELETE('/sandboxes/{sandboxID}', needId()));
        ctx.out(json ? JSON.stringify(s, null, 2) : describe(s));
        return 0;
      }
      case 'ls': {
        const { sandboxes } = await body(api().GET('/sandboxes', { params: { query: values.all ? { all: 'true' } : {} } }));
        // --json: the list itself, as it has always been printed.
        if (json) ctx.out(JSON.stringify(sandboxes, null, 2));
        else sandboxTable(sandboxes).forEach((l) => ctx.out(l));
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown sandbox command: ${command}`, usage);
    }
  },
};
