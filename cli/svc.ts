// The `svc` command-line client. Token commands work offline; `admin` commands are for operators
// and talk to the platform's database and cluster directly, not to the public API.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { TokenFormatError } from '../lib/tokens/token.js';
import { GroupUsageError, processContext } from './command.js';
import { describeFailure } from './failure.js';
import { commandGroups, groupNamed } from './groups.js';
import { attenuateToken, formatInspection, inspectToken, UsageError } from './token-commands.js';

const usage = `usage:
  svc token inspect [--json] TOKEN            decode a token offline and show its restrictions
  svc token attenuate --token TOKEN [--apps a,b] [--actions read,deploy] [--expires-in 1h]
                                              print a narrower token (offline)
  svc deploy APP [DIR] [--image REF] [--no-wait] [--timeout 300]
                                              deploy a directory (packed as .tar.gz) or an image, and
                                              follow it until it is live ($SVC_API_URL, $SVC_TOKEN)
  svc build [DIR] --app APP [--deploy] [--git URL [--ref REF] [--path DIR]] [--no-follow] [--json]
                                              build a directory (or a Git repository) for an app,
                                              streaming its log; exits 0 when it succeeded
  svc builds logs ID [-f] | get ID [--json] | ls APP [--json] | cancel ID
                                              a build's log (followed with -f), record, an app's
                                              builds, or stop one
  svc import REPO [--ref REF] [--name NAME] [--path DIR] [--preview] [--json]
                                              create an app from a Git repository and build it
                                              (--preview: what it would do, creating nothing)
  svc open APP [PATH]                          print a one-time link (5 minutes) that opens the app
                                              signed in as its owner ($SVC_API_URL, $SVC_TOKEN)
  svc sandbox open [--runtime R] [--network] [--idle SECONDS] [--lifetime SECONDS] [--json]
                                              open a sandbox and print its ID
  svc sandbox exec ID [--cwd DIR] [--timeout SECONDS] [--json] (-c 'SHELL COMMAND' | -- PROGRAM ARGS...)
                                              run a command in it; output streams, svc exits with its
                                              code (124 timed out, 128+N killed by signal N)
  svc sandbox put ID LOCAL REMOTE | get ID REMOTE [LOCAL]
                                              copy a file into or out of a sandbox
  svc sandbox rm ID | ls [--all] [--json]      destroy one; list open ones (--all: ended ones kept 24 h)
  svc eval --runtime R (-c CODE | FILE | -) [--network] [--timeout SECONDS] [--json]
                                              run code once in a fresh sandbox (GET /runtimes lists R)
  svc events [--follow] [--kind K,...] [--app APP] [--after ID] [--json]
                                              the account's events; --follow streams them and picks up
                                              where it was after a dropped connection
  svc db create NAME [--size BYTES] [--retain] [--no-wait] [--json] | ls [--json] | rm NAME
                                              the account's databases; create waits until Ready
  svc db attach NAME APP | detach APP         give an app DATABASE_URL and PG* (or take them away)
  svc db backup NAME [--no-wait] | backups NAME [--json] | restore BACKUP NEW-NAME
                                              back up now (waits until stored), list backups,
                                              restore one into a new database (waits until Ready)
  svc volumes ls [--json] | rm REF            the account's volumes (apps' machines' and databases');
                                              rm frees one no machine or database holds
  svc domains ls APP [--json] | add APP NAME [--json] | verify APP NAME [--json] | rm APP NAME
                                              an app's custom domains (NAME: shop.example.com, or
                                              '*.shop.example.com' quoted); add prints the DNS records
                                              to publish, verify checks them now and says what is wrong
${commandGroups.map((g) => g.synopsis).join('\n')}
  svc admin create-account --email EMAIL [--name NAME]
                                              create an account and print a full-authority token

TOKEN may be "-" to read it from standard input, or left out to use $SVC_TOKEN. Commands that call
the API read $SVC_API_URL (the API root, default http://127.0.0.1:8080/api) and $SVC_TOKEN (or
--token); --json prints the API's JSON on stdout. svc GROUP --help shows a group's options and an
example. Exit status: 0 done, 1 refused or failed (the API's message on stderr), 2 wrong usage.`;

function tokenArg(value: string | undefined): string {
  const raw = value === '-' ? readFileSync(0, 'utf8') : (value ?? process.env.SVC_TOKEN);
  if (!raw?.trim()) throw new UsageError('no token given (argument, "-" for standard input, or $SVC_TOKEN)');
  return raw.trim();
}

async function main(argv: string[]): Promise<void> {
  const [group, command, ...rest] = argv;
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
      ...apiTarget(values.token),
      wait: !values['no-wait'],
      timeoutMs: timeout * 1000,
      out: (line) => console.log(line),
    });
    return;
  }
  if (group === 'build') {
    const { values, positionals } = parseArgs({
      args: argv.slice(1),
      options: {
        app: { type: 'string' },
        deploy: { type: 'boolean' },
        git: { type: 'string' },
        ref: { type: 'string' },
        path: { type: 'string' },
        'no-follow': { type: 'boolean' },
        json: { type: 'boolean' },
        token: { type: 'string' },
      },
      allowPositionals: true,
    });
    if (!values.app) throw new UsageError('--app names the app to build for');
    const [dir] = positionals;
    if (values.git && dir) throw new UsageError('give a directory or --git, not both');
    if ((values.ref || values.path) && !values.git) throw new UsageError('--ref and --path go with --git');
    const { buildCommand } = await import('./builds.js');
    process.exitCode = await buildCommand(apiTarget(values.token), {
      app: values.app,
      ...(dir ? { dir } : {}),
      ...(values.git
        ? { git: { url: values.git, ...(values.ref ? { ref: values.ref } : {}), ...(values.path ? { path: values.path } : {}) } }
        : {}),
      deploy: values.deploy === true,
      follow: !values['no-follow'],
      json: values.json === true,
      out: (text) => process.stdout.write(text),
    });
    return;
  }
  if (group === 'import') {
    const { values, positionals } = parseArgs({
      args: argv.slice(1),
      options: {
        ref: { type: 'string' },
        name: { type: 'string' },
        path: { type: 'string' },
        preview: { type: 'boolean' },
        json: { type: 'boolean' },
        token: { type: 'string' },
      },
      allowPositionals: true,
    });
    const [repository] = positionals;
    if (!repository) throw new UsageError('name the repository to import (an https URL)');
    const { importCommand } = await import('./builds.js');
    process.exitCode = await importCommand(apiTarget(values.token), {
      repository,
      ...(values.ref ? { ref: values.ref } : {}),
      ...(values.name ? { name: values.name } : {}),
      ...(values.path ? { path: values.path } : {}),
      preview: values.preview === true,
      json: values.json === true,
      out: (text) => process.stdout.write(text),
    });
    return;
  }
  if (group === 'builds') {
    const { values, positionals } = parseArgs({
      args: argv.slice(2),
      options: { follow: { type: 'boolean', short: 'f' }, json: { type: 'boolean' }, token: { type: 'string' } },
      allowPositionals: true,
    });
    const { buildsCommand } = await import('./builds.js');
    process.exitCode = await buildsCommand(apiTarget(values.token), command, positionals, {
      follow: values.follow === true,
      json: values.json === true,
      out: (text) => process.stdout.write(text),
    });
    return;
  }
  if (group === 'open') {
    const { values, positionals } = parseArgs({ args: argv.slice(1), options: { token: { type: 'string' } }, allowPositionals: true });
    const [app, where = '/'] = positionals;
    if (!app) throw new UsageError('name the app to open');
    if (!where.startsWith('/')) throw new UsageError('PATH starts with /');
    const { openCommand } = await import('./open.js');
    console.log(await openCommand({ app, path: where, ...apiTarget(values.token) }));
    return;
  }
  if (group === 'events') {
    const { values } = parseArgs({
      args: argv.slice(1),
      options: {
        follow: { type: 'boolean', short: 'f' },
        kind: { type: 'string' },
        app: { type: 'string' },
        after: { type: 'string' },
        json: { type: 'boolean' },
        token: { type: 'string' },
      },
    });
    const after = values.after === undefined ? undefined : Number(values.after);
    if (after !== undefined && !(Number.isInteger(after) && after >= 0)) throw new UsageError('--after is an event id');
    const { eventsCommand } = await import('./events.js');
    await eventsCommand(apiTarget(values.token), {
      follow: values.follow === true,
      kinds: values.kind,
      app: values.app,
      after,
      json: values.json === true,
      out: (line) => console.log(line),
    });
    return;
  }
  if (group === 'db') {
    const { values, positionals } = parseArgs({
      args: argv.slice(2),
      options: {
        json: { type: 'boolean' },
        'no-wait': { type: 'boolean' },
        timeout: { type: 'string' },
        size: { type: 'string' },
        retain: { type: 'boolean' },
        token: { type: 'string' },
      },
      allowPositionals: true,
    });
    const size = values.size === undefined ? undefined : Number(values.size);
    if (size !== undefined && !Number.isInteger(size)) throw new UsageError('--size is a number of bytes');
    const { dbCommand } = await import('./db.js');
    await dbCommand(apiTarget(values.token), command, positionals, {
      json: values.json === true,
      wait: !values['no-wait'],
      timeoutMs: (seconds(values.timeout, '--timeout') ?? 120) * 1000,
      size,
      retain: values.retain === true,
      out: (line) => console.log(line),
    });
    return;
  }
  if (group === 'volumes') {
    const { values, positionals } = parseArgs({
      args: argv.slice(2),
      options: { json: { type: 'boolean' }, token: { type: 'string' } },
      allowPositionals: true,
    });
    const { volumesCommand } = await import('./volumes.js');
    await volumesCommand(apiTarget(values.token), command, positionals, { json: values.json === true, out: (line) => console.log(line) });
    return;
  }
  if (group === 'domains') {
    const { values, positionals } = parseArgs({
      args: argv.slice(2),
      options: { json: { type: 'boolean' }, token: { type: 'string' } },
      allowPositionals: true,
    });
    const { domainsCommand } = await import('./domains.js');
    await domainsCommand(apiTarget(values.token), command, positionals, { json: values.json === true, out: (line) => console.log(line) });
    return;
  }
  if (group === 'sandbox' || group === 'eval') {
    process.exitCode = await sandboxCommand(argv);
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

const apiTarget = (token: string | undefined) => ({
  apiUrl: (process.env.SVC_API_URL ?? 'http://127.0.0.1:8080/api').replace(/\/+$/, ''),
  token: tokenArg(token),
});

function seconds(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} is a number of seconds`);
  return n;
}

async function sandboxCommand(argv: string[]): Promise<number> {
  const sbx = await import('./sandbox.js');
  const io = { stdout: process.stdout, stderr: process.stderr };
  const [group, command] = argv;
  const { values, positionals } = parseArgs({
    args: argv.slice(group === 'eval' ? 1 : 2),
    options: {
      runtime: { type: 'string' },
      network: { type: 'boolean' },
      idle: { type: 'string' },
      lifetime: { type: 'string' },
      json: { type: 'boolean' },
      cwd: { type: 'string' },
      timeout: { type: 'string' },
      c: { type: 'string', short: 'c' },
      all: { type: 'boolean' },
      token: { type: 'string' },
    },
    allowPositionals: true,
  });
  const t = apiTarget(values.token);
  const timeout = seconds(values.timeout, '--timeout');
  const run = (path: string, body: Record<string, unknown>) =>
    values.json ? sbx.jsonExec(t, path, body, io) : sbx.streamExec(t, path, body, io);
  if (group === 'eval') {
    if (!values.runtime) throw new UsageError('--runtime is required (GET /runtimes lists them)');
    if (values.c !== undefined && positionals.length) throw new UsageError('give -c CODE or a file, not both');
    const code = await sbx.codeOf({ code: values.c, file: positionals[0] });
    return run('/eval', {
      runtime: values.runtime,
      code,
      ...(values.network ? { network: true } : {}),
      ...(timeout ? { timeout_seconds: timeout } : {}),
    });
  }
  const id = positionals[0];
  const needId = () => {
    if (!id) throw new UsageError(`name the sandbox: svc sandbox ${command} ID`);
    return encodeURIComponent(id);
  };
  switch (command) {
    case 'open': {
      const s = await sbx.openSandbox(t, {
        runtime: values.runtime,
        network: values.network,
        idle: seconds(values.idle, '--idle'),
        lifetime: seconds(values.lifetime, '--lifetime'),
      });
      console.log(values.json ? JSON.stringify(s, null, 2) : s.id);
      if (!values.json) console.error(sbx.describe(s));
      return s.state === 'ready' ? 0 : 1;
    }
    case 'exec': {
      const path = `/sandboxes/${needId()}/exec`;
      const argvOf = positionals.slice(1);
      if ((values.c !== undefined) === argvOf.length > 0)
        throw new UsageError("give -c 'SHELL COMMAND' or -- PROGRAM ARGS..., one of them");
      return run(path, {
        ...(values.c !== undefined ? { command: values.c } : { argv: argvOf }),
        ...(values.cwd ? { cwd: values.cwd } : {}),
        ...(timeout ? { timeout_seconds: timeout } : {}),
      });
    }
    case 'put': {
      const [, local, remote] = positionals;
      if (!local || !remote) throw new UsageError('svc sandbox put ID LOCAL REMOTE');
      const r = await sbx.putFile(t, needId(), local, remote);
      console.error(`wrote ${r.size} bytes to ${r.path}`);
      return 0;
    }
    case 'get': {
      const [, remote, local] = positionals;
      if (!remote) throw new UsageError('svc sandbox get ID REMOTE [LOCAL]');
      await sbx.getFile(t, needId(), remote, local ?? process.stdout);
      return 0;
    }
    case 'rm': {
      const { callJson } = await import('./api.js');
      const s = await callJson<import('./sandbox.js').SandboxRecord>(t, 'DELETE', `/sandboxes/${needId()}`);
      console.log(values.json ? JSON.stringify(s, null, 2) : sbx.describe(s));
      return 0;
    }
    case 'ls': {
      const { callJson } = await import('./api.js');
      const { sandboxes } = await callJson<{ sandboxes: import('./sandbox.js').SandboxRecord[] }>(
        t,
        'GET',
        `/sandboxes${values.all ? '?all=true' : ''}`,
      );
      console.log(values.json ? JSON.stringify(sandboxes, null, 2) : sbx.sandboxTable(sandboxes));
      return 0;
    }
    default:
      throw new UsageError(`unknown command: svc sandbox ${command ?? ''}`.trim());
  }
}

try {
  await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    if (err.message) console.error(`svc: ${err.message}`);
    // A group's own usage when the mistake is within a group: the whole list would bury it.
    const shown = err instanceof GroupUsageError ? err.usage : usage;
    if (shown) console.error(shown);
    process.exitCode = 2;
  } else if (err instanceof TokenFormatError) {
    console.error(`svc: not a valid token: ${err.message}`);
    process.exitCode = 1;
  } else {
    describeFailure(err).forEach((line) => console.error(line));
    process.exitCode = 1;
  }
}
