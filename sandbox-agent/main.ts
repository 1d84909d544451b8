// The agent in every sandbox pod (the svc/sandbox image, hack/images.sh): it runs what the platform
// asks in the sandbox (sandbox-agent/server.ts) as the sandbox's own unprivileged user, the same one
// tenant code runs as. It probes the installed runtimes once, when first asked.
//
// Env: SVC_SANDBOX_TOKEN (required: the bearer token the platform derives for this pod),
// SVC_SANDBOX_PORT (7070), SVC_SANDBOX_HOME (/home/app), SVC_SANDBOX_MAX_EXECS (16).
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { agentPort, sandboxHome } from '../lib/sandbox/exec.js';
import { installed, runtimeCatalogue, versionOf, type InstalledRuntime } from '../lib/sandbox/runtimes.js';
import { readOomKills } from './exec.js';
import { Agent } from './server.js';
import { dumpable, inSandboxPod, killStrays } from './strays.js';

const token = process.env.SVC_SANDBOX_TOKEN;
if (!token) {
  console.error('sandbox-agent: SVC_SANDBOX_TOKEN is required');
  process.exit(1);
}
// Tenant code runs with an environment of its own: the token does not go to it.
delete process.env.SVC_SANDBOX_TOKEN;
// Tenant code runs as this process's uid: were it dumpable, it could read the token from
// /proc/<agent>/environ, its memory, or attach to it (issue 30). The image makes it not so.
const inPod = await inSandboxPod();
if (inPod && (await dumpable())) {
  console.error(
    "sandbox-agent: this process is dumpable, so the code it runs could read and change it; run it on the image's execute-only node (hack/images.sh)",
  );
  process.exit(1);
}
/** Processes the agent runs for itself (the runtime probes): never taken for strays. */
const spared = new Set<number>();

/** Each runtime of the catalogue whose version probe answers is installed. */
async function probe(): Promise<InstalledRuntime[]> {
  const run = promisify(execFile);
  const found = await Promise.all(
    runtimeCatalogue.map(async (def) => {
      const running = run(def.version[0]!, def.version.slice(1), { timeout: 10_000 });
      const pid = running.child.pid;
      if (pid) spared.add(pid);
      const out = await running.then(
        (r) => `${r.stdout}${r.stderr}`,
        () => undefined,
      );
      if (pid) spared.delete(pid);
      const version = out === undefined ? undefined : versionOf(out);
      return version ? installed(def, version) : undefined;
    }),
  );
  return found.filter((r): r is InstalledRuntime => r !== undefined);
}

// Probed when first asked (GET /info?runtimes=1), not at start: the controllers ask one pool member
// per image, and every other pod's start (which each refill pays) stays seven processes lighter.
let runtimes: Promise<InstalledRuntime[]> | undefined;
const agent = new Agent({
  token,
  env: { home: process.env.SVC_SANDBOX_HOME ?? sandboxHome, tmp: '/tmp', path: '/usr/local/bin:/usr/bin:/bin', oomKills: readOomKills },
  runtimes: () => (runtimes ??= probe()),
  maxRunning: Number(process.env.SVC_SANDBOX_MAX_EXECS ?? 16),
  endStrays: inPod ? async () => void (await killStrays({ pid: process.pid, uid: process.getuid!() }, spared)) : undefined,
});
const port = Number(process.env.SVC_SANDBOX_PORT ?? agentPort);
await agent.listen(port);
// One exec through the whole path before the pod is ready: its first request otherwise pays for
// compiling that path and the first spawn (~35 ms), on the open's critical path instead of the pool's.
await new Promise<void>((resolve) => {
  const body = JSON.stringify({ argv: ['true'], timeoutMs: 10_000, maxOutputBytes: 16 });
  const req = request(
    {
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/exec',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    },
    (res) => {
      res.resume();
      res.once('end', resolve);
    },
  );
  req.once('error', () => resolve());
  req.end(body);
});
agent.warm = true;
process.on('SIGTERM', () => process.exit(0));
// A write past the sandbox's file-size limit raises SIGXFSZ, whose default ends the process: handled,
// the write fails with EFBIG instead and the upload answers why (server.ts), the agent lives on.
process.on('SIGXFSZ', () => undefined);
