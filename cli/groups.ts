// The command groups, by name, in the order `svc --help` lists them: an app's life first (create,
// configure, deploy, build, watch), then what an account has besides apps, then any call, shell
// completion, then signing in and out. svc.ts runs the one named; each is in its own file.
import { appsGroup } from './apps.js';
import { buildGroup } from './build.js';
import { buildsGroup } from './builds.js';
import type { CommandGroup } from './command.js';
import { completionGroup } from './completion.js';
import { dbGroup } from './db.js';
import { deployGroup } from './deploy.js';
import { deploysGroup } from './deploys.js';
import { domainsGroup } from './domains.js';
import { envGroup } from './env.js';
import { evalGroup } from './eval.js';
import { eventsGroup } from './events.js';
import { importGroup } from './import.js';
import { loginGroup, logoutGroup } from './login.js';
import { logsGroup } from './logs.js';
import { machinesGroup } from './machines.js';
import { metricsGroup } from './metrics.js';
import { openGroup } from './open.js';
import { previewsGroup } from './previews.js';
import { rawApiGroup } from './raw-api.js';
import { rollbackGroup } from './rollback.js';
import { sandboxGroup } from './sandbox.js';
import { sessionsGroup } from './sessions.js';
import { tokensGroup } from './tokens.js';
import { usageGroup } from './usage.js';
import { usersGroup } from './users.js';
import { volumesGroup } from './volumes.js';
import { dataGroup } from './data.js';
import { webhooksGroup } from './webhooks.js';

export const commandGroups: readonly CommandGroup[] = [
  appsGroup,
  envGroup,
  deployGroup,
  buildGroup,
  buildsGroup,
  importGroup,
  logsGroup,
  deploysGroup,
  rollbackGroup,
  previewsGroup,
  machinesGroup,
  metricsGroup,
  openGroup,
  usersGroup,
  sessionsGroup,
  domainsGroup,
  dbGroup,
  volumesGroup,
  dataGroup,
  sandboxGroup,
  evalGroup,
  eventsGroup,
  tokensGroup,
  webhooksGroup,
  usageGroup,
  rawApiGroup,
  completionGroup,
  loginGroup,
  logoutGroup,
];

export const groupNamed = (name: string | undefined) => commandGroups.find((g) => g.name === name);
