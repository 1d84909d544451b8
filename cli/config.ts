// The user's svc configuration: the credentials `svc login` stores (cli/login.ts), and where a
// command finds the API and its token. The file is credentials.json in $SVC_CONFIG_DIR, else
// $XDG_CONFIG_HOME/svc, else ~/.config/svc; the directory is made 0700 and the file written 0600,
// whole or not at all (a temporary file renamed over it). A file that others could read or write
// is refused, as ssh refuses such a key, rather than quietly chmod-ed back: its token may already
// have been read, which only the person can judge (docs/cli.md, "Signing in").
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fstatSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { GroupUsageError, type ApiTarget } from './command.js';

/** The API root when neither $SVC_API_URL nor a login says otherwise (a platform run by `make dev`). */
export const defaultApiUrl = 'http://127.0.0.1:8080/api';

/** What `svc login` stores: the API it signed in to, and the token it was given there. */
export interface Credentials {
  api_url: string;
  token: string;
  /** The token's id: `svc tokens rm NONCE`, the console's tokens page. */
  nonce: string;
  email: string;
  expires_at: string;
}

export type Env = Record<string, string | undefined>;

/** The credentials file cannot be used as it is: said in words, svc exits 1. */
export class CredentialsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsError';
  }
}

/** $SVC_CONFIG_DIR, else $XDG_CONFIG_HOME/svc, else ~/.config/svc (an empty variable counts as unset). */
export function configDir(env: Env = process.env): string {
  if (env.SVC_CONFIG_DIR) return path.resolve(env.SVC_CONFIG_DIR);
  if (env.XDG_CONFIG_HOME) return path.resolve(env.XDG_CONFIG_HOME, 'svc');
  return path.join(homedir(), '.config', 'svc');
}

export const credentialsPath = (env: Env = process.env) => path.join(configDir(env), 'credentials.json');

/** An API root as stored and compared: no trailing slash. */
export const normalizeApiUrl = (url: string) => url.trim().replace(/\/+$/, '');

const checksMode = process.platform !== 'win32';

/**
 * The stored credentials, or undefined when there is no file. Refuses (CredentialsError) a file
 * that is not a regular file, that belongs to another user, that group or others may read or
 * write, in a directory that is not the user's or that others may write to (unless `anyMode`: svc
 * logout still signs out of it), or that is not what svc login writes.
 */
export function readCredentials(env: Env = process.env, o: { anyMode?: boolean } = {}): Credentials | undefined {
  const file = credentialsPath(env);
  let text: string;
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const st = fstatSync(fd);
    if (!st.isFile()) throw new CredentialsError(`${file} is not a regular file: remove it, then svc login`);
    if (checksMode && !o.anyMode) {
      if (process.getuid && st.uid !== process.getuid())
        throw new CredentialsError(`${file} belongs to another user (uid ${st.uid}): remove it, then svc login`);
      // A directory others may write to lets them put their own file (their token, their API) in place.
      const dir = statSync(path.dirname(file));
      if ((dir.mode & 0o022) !== 0 || (process.getuid && dir.uid !== process.getuid())) {
        const dirMode = (dir.mode & 0o777).toString(8).padStart(4, '0');
        throw new CredentialsError(
          `${path.dirname(file)} can be changed by other users (mode ${dirMode}, uid ${dir.uid}), so ${file} is not used: ` +
            `someone else could have put it there. Make the directory yours alone (chmod 700 ${path.dirname(file)}), then svc login`,
        );
      }
      if ((st.mode & 0o077) !== 0) {
        const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
        throw new CredentialsError(
          `${file} can be read or changed by other users (mode ${mode}), so it is not used: its token may have been read. ` +
            `If nobody else could have, make it private: chmod 600 ${file}; else revoke the token and sign in again: svc logout && svc login`,
        );
      }
    }
    text = readFileSync(fd, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (err instanceof CredentialsError) throw err;
    throw new CredentialsError(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  let c: Partial<Record<keyof Credentials, unknown>>;
  try {
    c = JSON.parse(text) as typeof c;
  } catch {
    throw new CredentialsError(`${file} is not JSON: remove it, then svc login`);
  }
  const fields = ['api_url', 'token', 'nonce', 'email', 'expires_at'] as const;
  // Each a string, none empty but the email (an account may have none).
  const missing = fields.filter((f) => typeof c?.[f] !== 'string' || (f !== 'email' && !c[f]));
  if (missing.length) throw new CredentialsError(`${file} lacks ${missing.join(', ')}: remove it, then svc login`);
  return Object.fromEntries(fields.map((f) => [f, c[f]])) as unknown as Credentials;
}

/** Makes the config directory (0700) if it is not there yet; its path. */
export function ensureConfigDir(env: Env = process.env): string {
  const dir = configDir(env);
  try {
    statSync(dir);
  } catch {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // mkdir's mode is narrowed by the umask, never widened: 0700 it is, or narrower (made exact).
    if (checksMode) chmodSync(dir, 0o700);
  }
  return dir;
}

/** Stores the credentials: a temporary file made 0600 (never readable by others, even for a moment), renamed over the file. */
export async function writeCredentials(c: Credentials, env: Env = process.env): Promise<string> {
  ensureConfigDir(env);
  const file = credentialsPath(env);
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  // wx: a new file, never one (or a link) put there by someone else.
  const handle = await open(temp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(`${JSON.stringify(c, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  return file;
}

/** Removes the credentials file; whether there was one. */
export async function removeCredentials(env: Env = process.env): Promise<boolean> {
  try {
    await unlink(credentialsPath(env));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * Where the API is and the token to send, for every command on the API (svc.ts's ctx.target):
 * the token given (--token), else $SVC_TOKEN, else the one `svc login` stored; the API at
 * $SVC_API_URL, else the stored one, else the default. The stored token is only ever sent to the
 * API it was issued by: with $SVC_API_URL naming another, it is not used (an error says so).
 */
export function resolveTarget(token: string | undefined, env: Env = process.env, now = Date.now()): ApiTarget {
  const given = token?.trim() || env.SVC_TOKEN?.trim();
  const envUrl = env.SVC_API_URL?.trim() ? normalizeApiUrl(env.SVC_API_URL) : undefined;
  if (given && envUrl) return { apiUrl: envUrl, token: given };
  const stored = readCredentials(env);
  if (given) return { apiUrl: envUrl ?? (stored ? normalizeApiUrl(stored.api_url) : defaultApiUrl), token: given };
  // Only the message, not the whole usage: the one thing to do is said.
  if (!stored) throw new GroupUsageError('not signed in: run svc login (or set $SVC_TOKEN, or pass --token)', '');
  const storedUrl = normalizeApiUrl(stored.api_url);
  if (envUrl && envUrl !== storedUrl)
    throw new CredentialsError(
      `signed in to ${storedUrl}, not to $SVC_API_URL (${envUrl}), so the stored token is not sent there: ` +
        `svc login --api ${envUrl}, or set $SVC_TOKEN, or unset SVC_API_URL`,
    );
  const expires = Date.parse(stored.expires_at);
  if (Number.isFinite(expires) && expires <= now)
    throw new CredentialsError(`the token svc login stored (${stored.nonce}) expired at ${stored.expires_at}: run svc login again`);
  return { apiUrl: storedUrl, token: stored.token };
}
