// Asking a Git repository what a ref points at (`git ls-remote`), from the API, before a build of it
// is made: an unknown ref or an unreachable repository is the request's error, and the Build names
// the exact commit (two builds of one commit share their output). The URL is the tenant's, so it
// goes through the same guard as webhooks: https only, no credentials in it, its host resolved once
// and checked (no loopback, private or metadata address), and git pinned to that address
// (http.curloptResolve: no second lookup to rebind), no redirects, no other protocol. A token, for a
// private repository, travels in git's environment as a header, never on a command line.
import { spawn } from 'node:child_process';
import { isIP } from 'node:net';
import { isPublicAddress, publicAddressesOf, webhookUrlProblem, WebhookAddressError, type HostResolver } from '../webhooks/url-guard.js';

export class GitError extends Error {
  constructor(
    readonly kind: 'invalid' | 'not_found' | 'unreachable' | 'denied',
    message: string,
  ) {
    super(message);
  }
}

export interface RemoteOptions {
  token?: string | undefined;
  /** Loopback and private hosts allowed (tests, local development). */
  allowPrivate: boolean;
  resolver?: HostResolver | undefined;
  timeoutMs?: number;
}

const refPattern = /^[A-Za-z0-9._/-]{1,255}$/;

/** The URL as logs and errors may show it. */
export const shownUrl = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

function run(args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      if (out.length < 1_000_000) out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 10_000) err += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: signal ? 124 : (code ?? 1), out, err }));
  });
}

/** git's arguments and environment for one guarded call to `url`. */
async function guarded(url: string, o: RemoteOptions): Promise<{ config: string[]; env: NodeJS.ProcessEnv }> {
  const problem = webhookUrlProblem(url, { allowPrivate: o.allowPrivate });
  if (problem) throw new GitError('invalid', `repository: ${problem.replace(/^url /, '')}`);
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  let address: string;
  try {
    [address] = (await publicAddressesOf(host, o.resolver, o.allowPrivate ? () => true : isPublicAddress)) as [string];
  } catch (err) {
    if (err instanceof WebhookAddressError)
      throw new GitError(err.kind === 'unresolved' ? 'unreachable' : 'invalid', `repository: ${err.message}`);
    throw new GitError('unreachable', `repository: ${host} cannot be resolved (${(err as Error).message})`);
  }
  const pinned = isIP(host) ? [] : ['-c', `http.curloptResolve=${host}:${port}:${isIP(address) === 6 ? `[${address}]` : address}`];
  const config = [
    '-c',
    'protocol.allow=never',
    '-c',
    'protocol.https.allow=always',
    '-c',
    `protocol.http.allow=${o.allowPrivate ? 'always' : 'never'}`,
    '-c',
    'http.followRedirects=false',
    ...pinned,
  ];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: '/nonexistent',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    ...(o.token
      ? {
          GIT_CONFIG_COUNT: '1',
          GIT_CONFIG_KEY_0: 'http.extraHeader',
          GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${o.token}`).toString('base64')}`,
        }
      : {}),
  };
  return { config, env };
}

function failure(url: string, err: string, code: number): GitError {
  const said = err
    .trim()
    .split('\n')
    .filter(Boolean)
    .slice(-2)
    .join(' ')
    .replace(/\/\/[^@/\s]*@/g, '//***@');
  if (code === 124) return new GitError('unreachable', `${shownUrl(url)} did not answer in time`);
  if (/Authentication failed|could not read Username|403|401/i.test(said))
    return new GitError(
      'denied',
      `${shownUrl(url)} refused access${said ? ` (${said})` : ''}: is the token right, and does it read this repository?`,
    );
  if (/not found|404|does not appear to be a git repository/i.test(said))
    return new GitError('not_found', `${shownUrl(url)} is not a Git repository this platform can read${said ? ` (${said})` : ''}`);
  return new GitError('unreachable', `${shownUrl(url)} cannot be read${said ? `: ${said}` : ''}`);
}

/** The commit `ref` (a branch or tag; the default branch when unset) points at, and the ref's name. */
export async function resolveRef(url: string, ref: string | undefined, o: RemoteOptions): Promise<{ ref: string; commit: string }> {
  if (ref !== undefined && (!refPattern.test(ref) || ref.includes('..') || ref.startsWith('-')))
    throw new GitError('invalid', 'ref: must be a branch or tag name');
  const { config, env } = await guarded(url, o);
  const { code, out, err } = await run(
    [...config, 'ls-remote', '--symref', '--', url, ...(ref ? [`refs/heads/${ref}`, `refs/tags/${ref}`, `refs/tags/${ref}^{}`] : ['HEAD'])],
    env,
    o.timeoutMs ?? 20_000,
  );
  if (code !== 0) throw failure(url, err, code);
  const lines = out.split('\n').filter(Boolean);
  if (!ref) {
    const head = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(out)?.[1];
    const commit = lines.find((l) => /^[0-9a-f]{40}\tHEAD$/.test(l))?.slice(0, 40);
    if (!commit) throw new GitError('not_found', `${shownUrl(url)} has no default branch (an empty repository?)`);
    return { ref: head ?? 'HEAD', commit };
  }
  const byName = new Map(lines.map((l) => [l.slice(41), l.slice(0, 40)] as const));
  // A branch first; an annotated tag's commit is its peeled (^{}) line.
  const commit = byName.get(`refs/heads/${ref}`) ?? byName.get(`refs/tags/${ref}^{}`) ?? byName.get(`refs/tags/${ref}`);
  if (!commit || !/^[0-9a-f]{40}$/.test(commit)) throw new GitError('not_found', `${shownUrl(url)} has no branch or tag ${ref}`);
  return { ref, commit };
}

/**
 * A shallow copy of `commit` of `url` in `dir` (an empty directory): the tree an import preview
 * plans (lib/builds/plan.ts), through the same guard as resolveRef.
 */
export async function fetchTree(url: string, commit: string, dir: string, o: RemoteOptions): Promise<void> {
  if (!/^[0-9a-f]{40}$/.test(commit)) throw new GitError('invalid', 'commit: must be 40 hex digits');
  const { config, env } = await guarded(url, o);
  const timeout = o.timeoutMs ?? 60_000;
  const step = async (args: string[]) => {
    const { code, err } = await run(['-C', dir, '-c', `safe.directory=${dir}`, ...config, ...args], env, timeout);
    if (code !== 0) throw failure(url, err, code);
  };
  await step(['init', '--quiet', '.']);
  await step(['fetch', '--quiet', '--depth=1', '--no-tags', '--', url, commit]);
  await step(['checkout', '--quiet', '--detach', 'FETCH_HEAD']);
}

/** Every branch of the repository and the commit it points at (what a poll compares). */
export async function listBranches(url: string, o: RemoteOptions): Promise<Record<string, string>> {
  const { config, env } = await guarded(url, o);
  const { code, out, err } = await run([...config, 'ls-remote', '--heads', '--', url], env, o.timeoutMs ?? 20_000);
  if (code !== 0) throw failure(url, err, code);
  const heads: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^([0-9a-f]{40})\trefs\/heads\/(\S+)$/.exec(line);
    if (m) heads[m[2]!] = m[1]!;
  }
  return heads;
}
