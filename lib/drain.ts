// Reads what is left of a stream (a request body) and drops it: a server refusing an upload part
// way answers only once the client has finished sending, so the client gets the answer and not a
// connection reset in the middle of its upload (the sandbox agent and the API both refuse uploads).
import type { Readable } from 'node:stream';

export function drain(stream: Readable): Promise<void> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('end', resolve).once('close', resolve).resume();
  });
}
