import type * as k8s from '@kubernetes/client-node';
import type { Config } from '../lib/config.js';
import type { Db } from '../lib/db/connection.js';
import type { Logger } from '../lib/logger.js';
import type { TokenStore } from '../lib/tokens/store.js';
import type { AppRepository } from './repositories/apps.js';
import type { EnvRepository } from './repositories/env.js';

/** What the API's handlers work with; built once in main.ts (or by a test). */
export interface Services {
  config: Config;
  db: Db;
  tokens: TokenStore;
  core: k8s.CoreV1Api;
  apps: AppRepository;
  env: EnvRepository;
  log: Logger;
  clock: () => Date;
}
