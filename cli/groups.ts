// The command groups on the typed client, by name, in the order `svc --help` lists them. svc.ts
// runs the one named; each is in its own file.
import { appsGroup } from './apps.js';
import type { CommandGroup } from './command.js';
import { deploysGroup } from './deploys.js';
import { envGroup } from './env.js';
import { logsGroup } from './logs.js';
import { machinesGroup } from './machines.js';
import { metricsGroup } from './metrics.js';
import { previewsGroup } from './previews.js';
import { rawApiGroup } from './raw-api.js';
import { rollbackGroup } from './rollback.js';
import { sessionsGroup } from './sessions.js';
import { tokensGroup } from './tokens.js';
import { usageGroup } from './usage.js';
import { usersGroup } from './users.js';
import { webhooksGroup } from './webhooks.js';

export const commandGroups: readonly CommandGroup[] = [
  appsGroup,
  envGroup,
  logsGroup,
  deploysGroup,
  rollbackGroup,
  previewsGroup,
  machinesGroup,
  metricsGroup,
  usersGroup,
  sessionsGroup,
  tokensGroup,
  webhooksGroup,
  usageGroup,
  rawApiGroup,
];

export const groupNamed = (name: string | undefined) => commandGroups.find((g) => g.name === name);
