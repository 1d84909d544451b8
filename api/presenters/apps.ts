// An app as the API shows it: the response schema and its presenter, shared by every route that answers with an app.
import { z } from 'zod';
import { servicesOf } from '../../lib/app-services.js';
import type { AppRecord } from '../repositories/app-record.js';

export const appSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.string().nullable(),
  image: z.string().nullable(),
  url: z.string().nullable(),
  ready: z.string(),
  status: z.string(),
  machines: z.number(),
  current_deploy: z.string().nullable(),
  rollout: z.string().nullable().describe('How the latest change is rolling out, as the controller reports it'),
  services: z
    .array(
      z.object({
        name: z.string(),
        public: z.boolean(),
        image: z.string(),
        machines: z.number(),
        ready: z.string(),
        deploy: z.string().nullable().describe('The deploy its machines were made for'),
      }),
    )
    .nullable()
    .describe(
      "An app deployed from a compose file with several services: each one, the public one (which receives the app's hostname) first; null otherwise",
    ),
  expires_at: z.string().nullable(),
  created_at: z.string().nullable(),
});

export function presentApp(app: AppRecord): z.infer<typeof appSchema> {
  const ready = app.conditions.Ready;
  return {
    id: app.id,
    name: app.name,
    kind: app.spec.kind ?? null,
    image: app.spec.image ?? null,
    url: app.status?.url ?? null,
    ready: app.status?.ready ?? `0/${app.spec.machines ?? 1}`,
    status: ready?.reason ?? 'Pending',
    machines: app.spec.machines ?? 1,
    current_deploy: app.status?.currentDeploy ?? null,
    rollout: (() => {
      const p = app.conditions.Progressing;
      if (!p) return null;
      if ((p.observedGeneration ?? 0) < app.generation) return 'Pending: the controller has not taken up the change yet';
      return `${p.reason}: ${p.message}`;
    })(),
    services: app.spec.services?.length
      ? servicesOf(app.spec).map((view) => {
          const v = { name: view.name ?? '', public: view.public, image: view.image ?? '', machines: view.machines };
          const seen = app.status?.services?.find((x) => x.name === v.name);
          return { ...v, ready: seen?.ready ?? `0/${v.machines}`, deploy: seen?.deploy ?? null };
        })
      : null,
    expires_at: app.spec.expiresAt ?? null,
    created_at: app.createdAt?.toISOString() ?? null,
  };
}
