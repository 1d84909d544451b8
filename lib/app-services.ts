// The services of an App as one list, the public one first: the App's top-level fields (the
// service that receives the app's hostname) and each of spec.services (reached by the app's
// machines by name only). The controllers make machines from it; the API presents, names and
// counts services through it, so the two never disagree on what an App runs.
import type { App } from './resources/index.js';

export type Restart = NonNullable<NonNullable<App['spec']['services']>[number]['restart']>;

/**
 * One service of an App as its machines are made: the public one (the App's top-level fields, which
 * receives the app's hostname) or one of spec.services (reached by the app's machines by name only).
 */
export interface ServiceView {
  /** The service's name; undefined for the public service of an App that does not name it. */
  name: string | undefined;
  public: boolean;
  image: string | undefined;
  command?: string[] | undefined;
  args?: string[] | undefined;
  workingDir?: string | undefined;
  /** PORT, and the port the default readiness check knocks on (the public service's HTTP port). */
  port: number | undefined;
  /** Ports the app's other services reach it on, by name. */
  ports: number[];
  env: NonNullable<App['spec']['env']>;
  machines: number;
  volumes: NonNullable<App['spec']['volumes']>;
  healthcheck?: App['spec']['healthcheck'];
  restart: Restart;
  dependsOn: NonNullable<App['spec']['dependsOn']>;
  aliases: string[];
}

/** The App's services, the public one first. */
export function servicesOf(s: App['spec']): ServiceView[] {
  const port = s.port ?? 8080;
  const pub: ServiceView = {
    name: s.service,
    public: true,
    image: s.image,
    command: s.command,
    args: s.args,
    workingDir: s.workingDir,
    port,
    ports: [...new Set([port, ...(s.ports ?? [])])],
    env: s.env ?? [],
    machines: s.machines ?? 1,
    volumes: s.volumes ?? [],
    healthcheck: s.healthcheck,
    restart: 'always',
    dependsOn: s.dependsOn ?? [],
    aliases: s.aliases ?? [],
  };
  const others = (s.services ?? []).map((v): ServiceView => ({
    name: v.name,
    public: false,
    image: v.image,
    command: v.command,
    args: v.args,
    workingDir: v.workingDir,
    port: v.port ?? v.ports?.[0],
    ports: v.ports ?? [],
    env: v.env ?? [],
    machines: v.machines ?? 1,
    volumes: v.volumes ?? [],
    healthcheck: v.healthcheck,
    restart: v.restart ?? 'always',
    dependsOn: v.dependsOn ?? [],
    aliases: v.aliases ?? [],
  }));
  return [pub, ...others];
}
