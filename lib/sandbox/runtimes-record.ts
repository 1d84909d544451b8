// Where the runtimes a sandbox image really has are recorded: the controllers write what a pool
// member's agent found into this ConfigMap of the sandbox namespace, the API reads it for
// GET /runtimes (controllers/sandbox/pool-reconciler.ts).
export const runtimesConfigMap = 'svc-sandbox-runtimes';
/** The data key holding the JSON array of InstalledRuntime (lib/sandbox/runtimes.ts). */
export const runtimesKey = 'runtimes.json';
