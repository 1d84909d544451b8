// A fixed route table for benchmarks of ingress-auth: the one App named `bench` (benchHost's), its
// machine an upstream on loopback. In place of the informers, so no cluster is needed.
import type { Backend, RouteSource } from '../ingress-auth/routes.js';
import type { App } from '../lib/resources/index.js';

export function fixedRoutes(app: App, upstreamPort: number): RouteSource {
  const backend: Backend = { address: '127.0.0.1', port: upstreamPort, origin: `http://127.0.0.1:${upstreamPort}` };
  return {
    start: async () => undefined,
    stop: async () => undefined,
    app: (name) => (name === app.metadata.name ? app : undefined),
    backends: () => [backend],
    whenBackends: async () => [backend],
    origins: () => new Set([backend.origin]),
  };
}
