// The `svc` command-line client. Token commands work offline; `admin` commands are for operators
// and talk to the platform's database and cluster directly, not to the public API.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { TokenFormatError } from '../lib/tokens/token.js';
import { attenuateToken, formatInspection, inspectToken, UsageError } from './token-commands.js';

const usage = `usage:
  svc token inspect [--json] TOKEN            decode a token offline and show its restrictions
  svc token attenuate --token TOKEN [--apps a,b] [--actions read,deploy] [--expires-in 1h]
                                              print a narrower token (offline)
  svc deploy APP [DIR] [--image REF] [--no-wait] [--timeout 300]
                                              deploy a directory (packed as .tar.gz) or an image, and
                                              follow it until it is live ($SVC_API_URL, $SVC_TOKEN)
  svc open APP [PATH]                          print a one-time link (5 minutes) that opens the app
                                              signed in as its owner ($SVC_API_URL, $SVC_TOKEN)
  svc admin create-account --email EMAIL [--name NAME]
                                              create an account and print a full-authority token

TOKEN may be "-" to read it from standard input, or left out to use $SVC_TOKEN.`;

function tokenArg(value: string | undefined): string {
  const raw = value === '-' ? readFileSync(0, 'utf8') : (value ?? process.env.SVC_TOKEN);
  if (!raw?.trim()) throw new UsageError('no token given (argument, "-" for standard input, or $SVC_TOKEN)');
  return raw.trim();
}

async function main(argv: string[]): Promise<void> {
  const [group, command, ...rest] = argv;
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
  if (group === 'deploy') {
    const { values, positionals } = parseArgs({
      args: argv.slice(1),
      options: { image: { type: 'string' }, 'no-wait': { type: 'boolean' }, timeout: { type: 'string' }, token: { type: 'string' } },
      allowPositionals: true,
    });
    const [app, dir] = positionals;
    if (!app) throw new UsageError('name the app to deploy');
    if (values.image && dir) throw new UsageError('give a directory or --image, not both');
    const timeout = Number(values.timeout ?? 300);
    if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError('--timeout is seconds');
    const { deployCommand } = await import('./deploy.js');
    await deployCommand({
      app,
      ...(dir ? { dir } : {}),
      ...(values.image ? { image: values.image } : {}),
      apiUrl: (process.env.SVC_API_URL ?? 'http://127.0.0.1:8080/api').replace(/\/+$/, ''),
      token: tokenArg(values.token),
      wait: !values['no-wait'],
      timeoutMs: timeout * 1000,
      out: (line) => console.log(line),
    });
    return;
  }
  if (group === 'open') {
    const { values, positionals } = parseArgs({ args: argv.slice(1), options: { token: { type: 'string' } }, allowPositionals: true });
    const [app, where = '/'] = positionals;
    if (!app) throw new UsageError('name the app to open');
    if (!where.startsWith('/')) throw new UsageError('PATH starts with /');
    const { openCommand } = await import('./open.js');
    console.log(await openCommand({ app, path: where, apiUrl: (process.env.SVC_API_URL ?? 'http://127.0.0.1:8080/api').replace(/\/+$/, ''), token: tokenArg(values.token) }));
    return;
  }
  if (group === 'admin' && command === 'create-account') {
    const { values } = parseArgs({ args: rest, options: { email: { type: 'string' }, name: { type: 'string' } } });
    if (!values.email) throw new UsageError('--email is required');
    const { createAccountCommand } = await import('./admin.js');
    console.log(JSON.stringify(await createAccountCommand(values.email, values.name), null, 2));
    return;
  }
  throw new UsageError(group === undefined || group === 'help' || group === '--help' ? '' : `unknown command: ${argv.join(' ')}`);
}

try {
  await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    if (err.message) console.error(`svc: ${err.message}`);
    console.error(usage);
    process.exitCode = 2;
  } else if (err instanceof TokenFormatError) {
    console.error(`svc: not a valid token: ${err.message}`);
    process.exitCode = 1;
  } else {
    console.error(`svc: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
}
