// The local platform's registrar (make dev only): the double of name.com's Core API
// (hack/namecom-double.ts) on SVC_DEV_REGISTRAR_PORT (default 8057), with the username and token
// hack/dev.sh gives the API. Its faults are set over HTTP (POST /_double/faults) and its charges
// listed (GET /_double/charges); it keeps nothing across restarts.
import { startNameComDouble } from './namecom-double.js';

const port = Number(process.env.SVC_DEV_REGISTRAR_PORT ?? 8057);
const double = await startNameComDouble({
  port,
  username: process.env.SVC_REGISTRAR_USERNAME ?? 'svc-dev',
  token: process.env.SVC_REGISTRAR_TOKEN ?? 'svc-dev-token',
});
console.log(`registrar double (name.com Core API v1) listening on ${double.url}`);
const stop = () => void double.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
