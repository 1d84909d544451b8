// Reading a small request body with a limit, the one way: past the limit it stops collecting and
// discards the rest instead of destroying the request. Leaving a `for await` over the request
// destroys it, and with it the socket: a client still sending a body over the limit then gets a
// reset connection instead of the 413 that says why.
import type { Readable } from 'node:stream';

/** The body's bytes, or undefined when it is longer than `limit` (the rest is read and dropped). */
export async function readLimited(req: Readable, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false })) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += b.length;
    if (size > limit) break;
    chunks.push(b);
  }
  if (size <= limit) return Buffer.concat(chunks);
  // Drained at the socket's pace, to nowhere (the server's request timeout bounds how long), once
  // the loop has let go of the stream: resumed inside the loop, the connection's next request was
  // never read (Node 24; test/security/build-inputs.test.ts sends one after a refused body).
  req.resume();
  return undefined;
}
