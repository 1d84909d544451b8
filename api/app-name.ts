// The name a request may give a new app (create, fork, import), one rule for every route that takes one.
import { z } from 'zod';
import { dnsLabel, previewSeparator } from '../lib/contract.js';

/** Names that would collide with routes under /apps. */
// `imports` is a route; `login` is the platform's sign-in host (login.<apps domain>, SVC_AUTH_HOST).
const reserved = new Set(['imports', 'login']);

export const appName = z
  .string()
  .regex(dnsLabel, 'must be a DNS label: 1 to 63 lowercase letters, digits and dashes, not starting or ending with a dash')
  .refine((n) => !reserved.has(n), 'is reserved')
  // `<app>--<ref>` names the app's previews.
  .refine((n) => !n.includes(previewSeparator), `must not contain "${previewSeparator}" (it marks previews)`);
