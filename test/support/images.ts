// The images of the local registry that tests run (hack/images.sh builds them for this checkout and
// writes their references to <state>/images.env): real images, pulled by the nodes' containerd.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../lib/paths.js';

function load(): Record<string, string> {
  const file = path.join(process.env.SVC_STATE_DIR ?? path.join(repoRoot, '.svc'), 'images.env');
  const vars = Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  return vars;
}

const vars = load();
const need = (name: string): string => {
  const v = vars[name];
  if (!v) throw new Error(`${name} is missing from images.env: run make images`);
  return v;
};

export const images = {
  /** busybox-static: sh, nc, sleep, and the rest of its applets. */
  busybox: need('SVC_IMAGE_BUSYBOX'),
  /** Debian with Node.js of .node-version (`node`). */
  node: need('SVC_IMAGE_NODE'),
  /** Debian with python3. */
  python: need('SVC_IMAGE_PYTHON'),
  debian: need('SVC_IMAGE_DEBIAN'),
  runtime: need('SVC_RUNTIME_IMAGE'),
  /** The server of every Database: Debian's PostgreSQL and its entrypoint. */
  postgres: need('SVC_IMAGE_POSTGRES'),
  /** The builder of builds (and the base of services built from a plan). */
  builder: need('SVC_IMAGE_BUILDER'),
  /** The sandbox image: the runtimes and the sandbox agent. */
  sandbox: need('SVC_SANDBOX_IMAGE'),
  /** Debian's PostgreSQL as CloudNativePG runs it (uid 26, the major version first in its tag). */
  cnpgPostgres: need('SVC_IMAGE_CNPG_POSTGRES'),
  /** versitygw, an S3 object store (the chart test's, as a pod). */
  versitygw: need('SVC_IMAGE_VERSITYGW'),
  /** The platform's own components, as the chart will run them. */
  api: need('SVC_IMAGE_API'),
  controllers: need('SVC_IMAGE_CONTROLLERS'),
  ingressAuth: need('SVC_IMAGE_INGRESS_AUTH'),
  /** The local registry, host:port: a test pushes its own images there. */
  registry: need('SVC_IMAGE_BUSYBOX').split('/')[0]!,
} as const;
