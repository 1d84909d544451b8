// The console's files, as `make build` leaves them in dist/console (hack/build-console.ts): served
// at /console/ from memory, read once. Hashed assets (main-<hash>.js, main-<hash>.css) are cached
// for a year, index.html never (it names the current hashes). Every answer carries a strict Content
// Security Policy (scripts and styles from this origin only, no inline script, no framing) and
// X-Frame-Options: DENY. Any path without a file extension is the single page's route: index.html.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export const consolePrefix = '/console';

export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every answer under /console/. */
export const securityHeaders: Readonly<Record<string, string>> = {
  'Content-Security-Policy': contentSecurityPolicy,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  // The sign-in link's code must never leave in a Referer (it is redirected away at once anyway).
  'Referrer-Policy': 'no-referrer',
};

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export interface ConsoleFile {
  body: Buffer;
  type: string;
  cacheControl: string;
}

/** A name esbuild gave a content hash (main-ABCD1234.js): never changes, so cached for good. */
export function isHashed(name: string): boolean {
  return /-[A-Z0-9]{8,}\.[a-z]+$/.test(name);
}

/** Every file of the built console by its name, read once; undefined when the console is not built. */
export async function loadConsoleFiles(dir: string): Promise<Map<string, ConsoleFile> | undefined> {
  const names = await readdir(dir).catch(() => undefined);
  if (!names?.includes('index.html')) return undefined;
  const files = new Map<string, ConsoleFile>();
  for (const name of names) {
    const type = types[path.extname(name)];
    if (!type) continue;
    const cacheControl = isHashed(name) ? 'public, max-age=31536000, immutable' : 'no-cache';
    files.set(name, { body: await readFile(path.join(dir, name)), type, cacheControl });
  }
  return files;
}

/**
 * Which file answers a path under /console/: the file of that name, index.html for a page route
 * (no extension), undefined (404) for anything else. Only names of the flat build folder are ever
 * looked up, so no path reaches outside it.
 */
export function fileFor(files: ReadonlyMap<string, ConsoleFile>, pathname: string): ConsoleFile | undefined {
  const rest = pathname.slice(consolePrefix.length + 1);
  if (!rest.includes('/') && files.has(rest) && rest !== '') return files.get(rest);
  if (path.extname(rest) === '') return files.get('index.html');
  return undefined;
}
