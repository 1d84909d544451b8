// A free loopback port (bound, read, released): for servers the tests and benchmarks start where
// something else must already point (the API's app URLs, a benchmark's nginx upstream).
import { once } from 'node:events';
import net from 'node:net';

export async function freePort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}
