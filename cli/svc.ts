// The `svc` command-line client. Every command that calls the public API is a command group
// (cli/groups.ts, on the typed client of lib/client); token commands work offline; `admin` commands
// are for operators and talk to the platform's database and cluster directly, not to the public API.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { TokenFormatError } from '../lib/tokens/token.js';
import { GroupUsageError, printable, processContext } from './command.js';
import { candidates } from './completion.js';
import { resolveTarget } from './config.js';
import { describeFailure } from './failure.js';
import { commandGroups, groupNamed } from './groups.js';
import { attenuateToken, formatInspection, inspectToken, UsageError } from './token-commands.js';

const usage = `usage:
  svc token inspect [--json] TOKEN            decode a token offline and show its restrictions
  svc token attenuate --token TOKEN [--apps a,b] [--actions read,deploy] [--expires-in 1h]
                                              print a narrower token (offline)
${commandGroups.map((g) => g.synopsis).join('\n')}
  svc admin create-account --email EMAIL [--name NAME]
                                              create an account and print a full-authority token

TOKEN may be "-" to read it from standard input, or left out to use $SVC_TOKEN. Commands that call
the API send --token, else $SVC_TOKEN, else the token svc login stored (svc login --help), to
$SVC_API_URL (the API root), else svc login's, else http://127.0.0.1:8080/api; --json prints the
API's JSON on stdout. svc GROUP --help shows a group's options and an example. Exit status: 0 done,
1 refused or failed (the API's message on stderr), 2 wrong usage.`;

function tokenArg(value: string | undefined): string {
  const raw = value === '-' ? readFileSync(0, 'utf8') : (value ?? process.env.SVC_TOKEN);
  if (!raw?.trim()) throw new UsageError('no token given (argument, "-" for standard input, or $SVC_TOKEN)');
  return raw.trim();
}

async function main(argv: string[]): Promise<void> {
  const [group, command, ...rest] = argv;
  // The words a shell's tab completes to (cli/completion.ts): one per line, without the API.
  if (group === '__complete') {
    candidates(argv.slice(1), commandGroups).forEach((word) => console.log(word));
    return;
  }
  const typed = groupNamed(group);
  if (typed) {
    process.exitCode = await typed.run(argv.slice(1), processContext(apiTarget));
    return;
  }
  if (group === 'help' || group === '--help' || group === '-h') {
    console.log(usage);
    return;
  }
  if (group === 'token' && command === 'inspect') {
    const { values, positionals } = parseArgs({ args: rest, options: { json: { type: 'boolean' } }, allowPositionals: true });
    const info = inspectToken(tokenArg(positionals[0]));
    console.log(values.json ? JSON.stringify(info, null, 2) : formatInspection(info));
    return;
  }
  if (group === 'token' && command === 'attenuate') {
    const { values } = parseArgs({
      args: rest,
      options: { token: { type: 'string' }, apps: { type: 'string' }, actions: { type: 'string' }, 'expires-in': { type: 'string' } },
    });
    console.log(attenuateToken(tokenArg(values.token), { apps: values.apps, actions: values.actions, expiresIn: values['expires-in'] }));
    return;
  }
  if (group === 'admin' && command === 'create-account') {
    const { values } = parseArgs({ args: rest, options: { email: { type: 'string' }, name: { type: 'string' } } });
    if (!values.email) throw new UsageError('--email is required');
    const { createAccountCommand } = await import('./admin.js');
    console.log(JSON.stringify(await createAccountCommand(values.email, values.name), null, 2));
    return;
  }
  throw new UsageError(group === undefined ? '' : `unknown command: ${argv.join(' ')}`);
}

/**
 * Where the API is, and the token: --token ("-" reads it from standard input), else $SVC_TOKEN, else
 * the one svc login stored; the API at $SVC_API_URL, else svc login's, else the default (cli/config.ts).
 */
const apiTarget = (token: string | undefined) => resolveTarget(token === '-' ? readFileSync(0, 'utf8') : token, process.env);

// What goes wrong is told to people, in words the API may have chosen: printable.
const say = (line: string) => console.error(printable(line));

try {
  await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    if (err.message) say(`svc: ${err.message}`);
    // A group's own usage when the mistake is within a group: the whole list would bury it.
    const shown = err instanceof GroupUsageError ? err.usage : usage;
    if (shown) say(shown);
    process.exitCode = 2;
  } else if (err instanceof TokenFormatError) {
    say(`svc: not a valid token: ${err.message}`);
    process.exitCode = 1;
  } else {
    describeFailure(err).forEach((line) => say(line));
    process.exitCode = 1;
  }
}
