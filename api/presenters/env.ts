// An app's environment as the env operations answer it (GET, PATCH and PUT /apps/{appID}/env): the
// app's own variables as they were always shown, and beside them what the platform gives its
// machines from elsewhere (an attached database's DATABASE_URL and PG*), named with their source and
// masked, so what the machines really get is visible where people look for it
// (docs/decisions/0030-provided-env.md).
import { z } from 'zod';
import type { AppRecord } from '../repositories/app-record.js';
import type { Env } from '../repositories/env.js';

/**
 * The variables an attached database gives every machine of its app, in the order they get them:
 * controllers/app/machine-spec.ts databaseEnv writes them (the App controller is another process,
 * so the names are said here again; test/unit/env-provided.test.ts fails when the two differ).
 */
export const databaseEnvNames = ['PGHOST', 'PGPORT', 'PGUSER', 'PGPASSWORD', 'PGDATABASE', 'DATABASE_URL'] as const;

const providedSchema = z.object({
  name: z.string(),
  source: z
    .object({
      kind: z
        .enum(['database'])
        .describe('What provides it: "database", an attached database (more kinds may come: show an unknown one as it is)'),
      name: z.string().describe("The provider's name: the database's"),
    })
    .describe('Where the variable comes from'),
  masked: z
    .literal(true)
    .describe(
      'Its value is not shown (these are credentials; the machines get the real one): there is no value field, not even a placeholder',
    ),
  overrides: z
    .boolean()
    .describe("The app's own env has a variable of this name too: its machines get this one, not the app's (an attachment wins)"),
});

export const envSchema = z.object({
  env: z.record(z.string(), z.string()).describe("The app's own variables, the ones these operations set"),
  provided: z
    .array(providedSchema)
    .describe("What the platform gives the app's machines besides: an attached database's variables, in the order the machines get them"),
});

export type ProvidedEnvVar = z.infer<typeof providedSchema>;

/**
 * What an attached database (`database`: the App's spec.database) gives the app's machines, beside
 * `own`, the app's variables. The database's win on a machine: they are the Pod's `env`, the app's
 * its `envFrom` (Kubernetes lets `env` win), and they come after a service's own variables in `env`
 * (the last of a name wins). Listed from the moment the App names the database: its machines get
 * them once the App controller sees the database's address, and are replaced then.
 */
export function providedEnv(database: string | undefined, own: Env): ProvidedEnvVar[] {
  if (!database) return [];
  return databaseEnvNames.map((name) => ({
    name,
    source: { kind: 'database', name: database },
    masked: true,
    overrides: Object.hasOwn(own, name),
  }));
}

/** The answer of the env operations for an app whose own variables are `own`. */
export function presentEnv(app: Pick<AppRecord, 'spec'>, own: Env): z.infer<typeof envSchema> {
  return { env: own, provided: providedEnv(app.spec.database, own) };
}
