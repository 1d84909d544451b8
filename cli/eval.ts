// `svc eval`: runs code once in a fresh sandbox (POST /eval; docs/api/sandboxes.md), its output
// streaming as it comes and svc exiting with the program's code, as `svc sandbox exec` does.
import { connect, GroupUsageError, parseGroupArgs, printUsage, readInput, secondsOption, type CommandGroup } from './command.js';
import { runExec } from './sandbox.js';

const usage = `usage:
  svc eval --runtime R (-c CODE | FILE | -) [--network] [--timeout SECONDS] [--json]
                                               run code once in a fresh sandbox: -c CODE, a file, or -
                                               for standard input; svc exits with its code (124 timed
                                               out, 128+N killed by signal N)
  --runtime R   the language: GET /runtimes lists them (python, node, ts, ...)
  --network     allow outbound connections (default: none at all)
  --json        the whole result once it ends (output, exit code, duration) as the API answers it
example:
  svc eval --runtime python -c 'print(6 * 7)'`;

export const evalGroup: CommandGroup = {
  name: 'eval',
  synopsis: `  svc eval --runtime R (-c CODE | FILE | -) [--network] [--timeout SECONDS] [--json]
                                              run code once in a fresh sandbox (GET /runtimes lists R)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      runtime: { type: 'string' },
      network: { type: 'boolean' },
      timeout: { type: 'string' },
      json: { type: 'boolean' },
      c: { type: 'string', short: 'c' },
    });
    if (values.help) return printUsage(this, ctx);
    if (!values.runtime) throw new GroupUsageError('--runtime is required (GET /runtimes lists them)', usage);
    const [file, extra] = positionals;
    if (values.c !== undefined && file !== undefined) throw new GroupUsageError('give -c CODE or a file, not both', usage);
    if (extra !== undefined) throw new GroupUsageError(`one file at a time (got ${file} and ${extra})`, usage);
    const timeout = secondsOption(values.timeout, '--timeout', usage);
    let code = values.c;
    if (code === undefined) {
      if (file === undefined) throw new GroupUsageError('give the code with -c CODE, or a file (- for standard input)', usage);
      code = await readInput(ctx, file);
    }
    return runExec(
      connect(ctx, values.token),
      ctx,
      {
        eval: {
          runtime: values.runtime,
          code,
          ...(values.network ? { network: true } : {}),
          ...(timeout ? { timeout_seconds: timeout } : {}),
        },
      },
      values.json === true,
    );
  },
};
