// The in-pod server of the platform's runtime image (svc/runtime, hack/images.sh). It listens where
// the App controller's pod spec says: $HOST:$PORT, and serves the site tree in SVC_SITE_ROOT as the
// app's kind asks. With SVC_ARTIFACT_DIGEST it first fetches that artifact under the site root and
// verifies it (runtime/fetch.ts: SVC_ARTIFACT_URL, SVC_ARTIFACT_TOKEN, SVC_FETCH_DEADLINE_MS;
// runtime/revisions.ts), and listens only once the site is in place (runtime/serve.ts). With
// SVC_CONTROL_PORT it first of all opens the machine's own port (runtime/machine-port.ts), where
// the kubelet's readiness probe is answered as soon as the site is served; with SVC_CONTROL_KEY,
// SVC_POD_NAME and SVC_POD_UID as well it takes the controller's swap orders there
// (runtime/control.ts): another artifact served in place.
//
// Env: SVC_SITE_ROOT (required), SVC_APP_KIND (static | html | markdown | handlers; default static),
// PORT (8080), HOST (0.0.0.0), SVC_DRAIN_MS (2000), SVC_LOG_LEVEL, and for handler trees
// SVC_HANDLER_TIMEOUT_MS (30000), SVC_HANDLER_MAX_PROCESSES (16), SVC_HANDLER_MAX_WAITING (64)
// (runtime/handlers.ts), and for the visitor's identity SVC_AUTH_JWKS_URL, SVC_AUTH_ISSUER and
// SVC_AUTH_AUDIENCE (runtime/identity.ts: without them every visitor is anonymous).
//
// With the argument `fetch` it only fetches (a build's source, runtime/fetch.ts): the image's entry
// point stays the same, so a pod spec says `args: [fetch]` rather than a path inside the image.
import { listenMachinePort, type MachinePort } from './machine-port.js';

/** How long a readiness probe is held before the machine says it is not ready yet. */
const readyHoldMs = 8000;

if (process.argv[2] === 'fetch') {
  await (await import('./fetch.js')).main();
} else {
  // The machine port listens before the rest of the runtime is even loaded (only it is imported
  // statically): a readiness probe that comes early is held, not refused.
  const machine = await openMachinePort();
  await (await import('./serve.js')).serve(machine);
}

async function openMachinePort(): Promise<MachinePort | undefined> {
  const port = Number(process.env.SVC_CONTROL_PORT);
  if (!process.env.SVC_CONTROL_PORT || !Number.isInteger(port) || port < 1 || port > 65535 || port === Number(process.env.PORT ?? 8080)) {
    return undefined;
  }
  try {
    return await listenMachinePort(port, process.env.HOST ?? '0.0.0.0', readyHoldMs);
  } catch (err) {
    console.error(`runtime: cannot listen on the machine port ${port}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
