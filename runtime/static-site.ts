// Serves a static site from a directory, the way hosting platforms do: index files, clean URLs
// (/about serves about.html), the site's own 404.html, ETags with conditional requests, cache
// headers by kind of file, and byte ranges. Files are streamed, never read whole into memory.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';

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

interface Found {
  file: string;
  size: number;
  mtimeMs: number;
}

async function fileAt(file: string): Promise<Found | undefined> {
  try {
    const s = await stat(file);
    return s.isFile() ? { file, size: s.size, mtimeMs: s.mtimeMs } : undefined;
  } catch {
    return undefined;
  }
}

export function createStaticSite(root: string): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const base = path.resolve(root);

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
    if (decoded.endsWith('/')) return fileAt(path.join(target, 'index.html'));
    const exact = await fileAt(target);
    if (exact) return exact;
    const html = await fileAt(`${target}.html`);
    if (html) return html;
    // A directory without its slash: send the browser to the slash, so relative links resolve.
    if (await fileAt(path.join(target, 'index.html'))) return 'redirect-slash';
    return undefined;
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
    let status = 200;
    let file = found;
    if (!file) {
      status = 404;
      file = await fileAt(path.join(base, '404.html'));
      if (!file) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-cache' }).end('not found\n');
        return;
      }
    }
    const etag = `"${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}"`;
    const headers: Record<string, string | number> = {
      'Content-Type': contentType(file.file),
      'Cache-Control': status === 404 ? 'no-cache' : cacheControl(file.file),
      ETag: etag,
      'Last-Modified': new Date(file.mtimeMs).toUTCString(),
      'Accept-Ranges': 'bytes',
    };
    if (status === 200) {
      const inm = req.headers['if-none-match'];
      if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
        res.writeHead(304, { ETag: etag, 'Cache-Control': headers['Cache-Control']! }).end();
        return;
      }
    }
    const range = status === 200 ? parseRange(req.headers.range, file.size) : undefined;
    if (range === 'unsatisfiable') {
      res.writeHead(416, { 'Content-Range': `bytes */${file.size}`, 'Content-Type': 'text/plain; charset=utf-8' }).end('range not satisfiable\n');
      return;
    }
    if (range) {
      status = 206;
      headers['Content-Range'] = `bytes ${range.start}-${range.end}/${file.size}`;
      headers['Content-Length'] = range.end - range.start + 1;
    } else {
      headers['Content-Length'] = file.size;
    }
    res.writeHead(status, headers);
    if (req.method === 'HEAD' || file.size === 0) {
      res.end();
      return;
    }
    const stream = createReadStream(file.file, range ? { start: range.start, end: range.end } : {});
    stream.on('error', () => res.destroy());
    stream.pipe(res);
  };
}
