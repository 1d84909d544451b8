// Serves a static site from a directory, the way hosting platforms do: index files, clean URLs
// (/about serves about.html), the site's own 404.html, ETags with conditional requests, cache
// headers by kind of file, and byte ranges. Files are streamed, never read whole into memory.
// HTML apps and Markdown sites are this same server with other index names and extensions, plus a
// render hook that may replace a file's bytes with a page built for the request.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { viewerKey, viewerVary } from './viewer.js';

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
};

export function contentType(file: string): string {
  return types[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/** HTML revalidates every time; fingerprinted assets (app.3f9a1c2e.js) are immutable; the rest is cached briefly. */
export function cacheControl(file: string): string {
  if (/\.html?$/i.test(file)) return 'public, max-age=0, must-revalidate';
  if (/[.-][0-9a-f]{8,}\.[a-z0-9]+$/i.test(path.basename(file))) return 'public, max-age=31536000, immutable';
  return 'public, max-age=300';
}

export type Range = { start: number; end: number } | 'unsatisfiable' | undefined;

/** One byte range of `Range: bytes=...` (undefined: serve everything, as for several ranges). */
export function parseRange(header: string | undefined, size: number): Range {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

/**
 * Names in the site root starting with this prefix belong to the platform (the artifact marker,
 * temporary files of an extraction) and are never served.
 */
export const reservedPrefix = '.svc-';
export { artifactMarker } from '../lib/contract.js';

export interface Found {
  file: string;
  size: number;
  mtimeMs: number;
  /** The URL named the file itself, not through a clean URL, an index file or the 404 page. */
  exact: boolean;
}

/** A page built for one request in place of the file's bytes. */
export interface Rendered {
  body: string | Buffer;
  /** Defaults to HTML. */
  contentType?: string;
  /** The body depends on the viewer: cached privately, varied and tagged by viewer. */
  personal: boolean;
  /** More response headers (an HTML app's data pages: their Content-Security-Policy). */
  headers?: Readonly<Record<string, string>>;
}

export interface SiteOptions {
  /** Files that serve a directory URL ("/docs/"), in order. */
  indexFiles?: readonly string[];
  /** Extensions tried for a clean URL ("/about" → about.html), in order. */
  extensions?: readonly string[];
  /** The site's own not-found pages, in order. */
  notFoundFiles?: readonly string[];
  /** Returns a page to send instead of the file, or undefined to send the file as it is. */
  render?: (req: IncomingMessage, found: Found, status: 200 | 404) => Promise<Rendered | undefined>;
}

export type SiteHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

async function fileAt(file: string, exact = false): Promise<Found | undefined> {
  try {
    const s = await stat(file);
    return s.isFile() ? { file, size: s.size, mtimeMs: s.mtimeMs, exact } : undefined;
  } catch {
    return undefined;
  }
}

async function firstFile(files: string[]): Promise<Found | undefined> {
  for (const file of files) {
    const found = await fileAt(file);
    if (found) return found;
  }
  return undefined;
}

function matchesEtag(header: string | undefined, etag: string): boolean {
  return !!header && header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*');
}

export function createStaticSite(root: string, options: SiteOptions = {}): SiteHandler {
  const base = path.resolve(root);
  const indexFiles = options.indexFiles ?? ['index.html'];
  const extensions = options.extensions ?? ['.html'];
  const notFoundFiles = options.notFoundFiles ?? ['404.html'];

  /** The file a URL path names, under the site root only; candidates in order. */
  async function resolve(urlPath: string): Promise<Found | 'redirect-slash' | undefined> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return undefined;
    }
    if (decoded.includes('\0')) return undefined;
    const target = path.resolve(base, '.' + path.posix.normalize('/' + decoded));
    if (target !== base && !target.startsWith(base + path.sep)) return undefined;
    if (
      path
        .relative(base, target)
        .split(path.sep)
        .some((s) => s.startsWith(reservedPrefix))
    )
      return undefined;
    const indexes = () => indexFiles.map((name) => path.join(target, name));
    if (decoded.endsWith('/')) return firstFile(indexes());
    const exact = await fileAt(target, true);
    if (exact) return exact;
    const clean = await firstFile(extensions.map((ext) => target + ext));
    if (clean) return clean;
    // A directory without its slash: send the browser to the slash, so relative links resolve.
    if (await firstFile(indexes())) return 'redirect-slash';
    return undefined;
  }

  function sendRendered(req: IncomingMessage, res: ServerResponse, page: Rendered, status: number): void {
    const body = typeof page.body === 'string' ? Buffer.from(page.body, 'utf8') : page.body;
    const hash = createHash('sha256').update(body);
    // Two viewers never share a tag, even when their pages happen to be byte-identical.
    if (page.personal) hash.update('\0').update(viewerKey(req));
    const etag = `"r-${hash.digest('base64url').slice(0, 27)}"`;
    const headers: Record<string, string | number> = {
      'Content-Type': page.contentType ?? 'text/html; charset=utf-8',
      'Cache-Control': page.personal ? 'private, no-cache' : status === 404 ? 'no-cache' : 'public, max-age=0, must-revalidate',
      ETag: etag,
      ...page.headers,
    };
    if (page.personal) headers.Vary = viewerVary;
    if (status === 200 && matchesEtag(req.headers['if-none-match'], etag)) {
      res.writeHead(304, headers).end();
      return;
    }
    headers['Content-Length'] = body.length;
    res.writeHead(status, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://site');
    const found = await resolve(url.pathname);
    if (found === 'redirect-slash') {
      res.writeHead(308, { Location: `${url.pathname}/${url.search}` }).end();
      return;
    }
    let status: 200 | 404 = 200;
    let file = found;
    if (!file) {
      status = 404;
      file = await firstFile(notFoundFiles.map((name) => path.join(base, name)));
      if (!file) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-cache' }).end('not found\n');
        return;
      }
    }
    const page = options.render ? await options.render(req, file, status) : undefined;
    if (page) {
      sendRendered(req, res, page, status);
      return;
    }
    const etag = `"${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}"`;
    const headers: Record<string, string | number> = {
      'Content-Type': contentType(file.file),
      'Cache-Control': status === 404 ? 'no-cache' : cacheControl(file.file),
      ETag: etag,
      'Last-Modified': new Date(file.mtimeMs).toUTCString(),
      'Accept-Ranges': 'bytes',
    };
    if (status === 200 && matchesEtag(req.headers['if-none-match'], etag)) {
      res.writeHead(304, { ETag: etag, 'Cache-Control': headers['Cache-Control']! }).end();
      return;
    }
    const range = status === 200 ? parseRange(req.headers.range, file.size) : undefined;
    if (range === 'unsatisfiable') {
      res
        .writeHead(416, { 'Content-Range': `bytes */${file.size}`, 'Content-Type': 'text/plain; charset=utf-8' })
        .end('range not satisfiable\n');
      return;
    }
    if (range) {
      headers['Content-Range'] = `bytes ${range.start}-${range.end}/${file.size}`;
      headers['Content-Length'] = range.end - range.start + 1;
    } else {
      headers['Content-Length'] = file.size;
    }
    res.writeHead(range ? 206 : status, headers);
    if (req.method === 'HEAD' || file.size === 0) {
      res.end();
      return;
    }
    const stream = createReadStream(file.file, range ? { start: range.start, end: range.end } : {});
    stream.on('error', () => res.destroy());
    stream.pipe(res);
  };
}
