// Serves the HTML data client (ingress-auth/data/client/main.ts, bundled by `make build` into
// browser-client.js beside this module) at /_svc/data/client.js on every app hostname. Read once at
// start; revalidated by its ETag, cached five minutes (a new platform version is picked up by then).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';

export class DataClient {
  private readonly etag: string;

  constructor(private readonly body: Buffer) {
    this.etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  }

  /** The bundle `make build` wrote; a clear error when it was not built. */
  static async load(file: URL = new URL('./browser-client.js', import.meta.url)): Promise<DataClient> {
    const body = await readFile(file).catch((err: unknown) => {
      throw new Error(`the HTML data client ${file.pathname} is missing: run make build (${String(err)})`);
    });
    return new DataClient(body);
  }

  send(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    const headers = {
      etag: this.etag,
      'cache-control': 'public, max-age=300',
      'x-content-type-options': 'nosniff',
      'x-request-id': requestId,
    };
    if (req.headers['if-none-match'] === this.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, 'content-type': 'text/javascript; charset=utf-8', 'content-length': this.body.length });
    res.end(req.method === 'HEAD' ? undefined : this.body);
  }
}
