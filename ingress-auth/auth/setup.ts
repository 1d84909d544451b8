// Which sign-in providers this ingress offers, from the configuration: email links when mail is
// configured, passkeys always (they need nothing outside), idp and codehost when their clients are
// configured. One place, used by main.ts and the tests, so both run the same wiring.
import type { Knex } from 'knex';
import type { ComponentConfig } from '../../lib/config.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { codehostProvider } from './providers/codehost.js';
import type { CallbackRoute } from './providers/flow.js';
import { idpProvider } from './providers/idp.js';
import { passkeyProvider } from './providers/passkey.js';
import type { ProviderRoute } from './routes.js';
import type { SignIn } from './sign-in.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'ingress-auth'>;

export interface SignInProviders {
  routes: Map<string, ProviderRoute>;
  callbacks: Map<string, CallbackRoute>;
  available: { email: boolean; passkey: boolean; idp: boolean; codehost: boolean };
}

export function signInProviders(deps: {
  config: Config;
  log: Logger;
  db: Knex;
  signIn: SignIn;
  /** appAtHost (host.ts) on the route table: app hostnames and verified custom domains alike. */
  appOfHost: (host: string) => App | undefined;
  /** Whether a hostname is served over HTTPS now (providers/flow.ts ProviderDeps). */
  servedOverTls?: (host: string) => boolean;
  mail: boolean;
}): SignInProviders {
  const routes = new Map<string, ProviderRoute>();
  const callbacks = new Map<string, CallbackRoute>();
  const add = (p: { routes: Map<string, ProviderRoute>; callbacks: Map<string, CallbackRoute> }) => {
    for (const [k, v] of p.routes) routes.set(k, v);
    for (const [k, v] of p.callbacks) callbacks.set(k, v);
  };
  add({ ...passkeyProvider(deps.db, deps.signIn.clock), callbacks: new Map() });
  if (deps.config.auth.idp) add(idpProvider(deps));
  if (deps.config.auth.codehost) add(codehostProvider(deps));
  return {
    routes,
    callbacks,
    available: {
      email: deps.mail,
      passkey: true,
      idp: deps.config.auth.idp !== undefined,
      codehost: deps.config.auth.codehost !== undefined,
    },
  };
}
