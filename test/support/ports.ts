// A free loopback port for the benchmarks' servers (bound, read, released).
import { once } from 'node:events';
import net from 'node:net';

export async function freePort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}
