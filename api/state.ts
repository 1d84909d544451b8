import type { Logger } from '../lib/logger.js';

/** What the middleware chain keeps on ctx.state. */
export interface ApiState {
  requestId: string;
  log: Logger;
}
