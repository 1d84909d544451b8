import type { Logger } from '../lib/logger.js';

/** What the middleware chain keeps on ctx.state. */
export interface ApiState {
  requestId: string;
  /**
   * The API's logger. Lines about a request carry its `requestId` field; a per-request child logger
   * would do that implicitly but costs a measurable share of each request (bench/api).
   */
  log: Logger;
}
