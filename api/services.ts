import * as k8s from '@kubernetes/client-node';
import { ArtifactStore } from '../lib/artifacts/store.js';
import { AppUserStore } from '../lib/auth/app-users.js';
import { AuthHousekeeping } from '../lib/auth/housekeeping.js';
import { HostnameStore } from '../lib/hostnames.js';
import { Invitations } from '../lib/auth/invitations.js';
import { LinkStore } from '../lib/auth/links.js';
import { SessionStore } from '../lib/auth/sessions.js';
import type { ComponentConfig } from '../lib/config.js';
import type { Db } from '../lib/db/connection.js';
import { DeployStore } from '../lib/deploys.js';
import { LeaderElection } from '../lib/kube/leader.js';
import type { Logger } from '../lib/logger.js';
import { MailOutbox } from '../lib/mail/outbox.js';
import type { TokenStore } from '../lib/tokens/store.js';
import { AppActions } from './deploys/actions.js';
import { Deployer } from './deploys/deployer.js';
import { DeployRecorder } from './deploys/recorder.js';
import { AppRepository } from './repositories/apps.js';
import { EnvRepository } from './repositories/env.js';
import { MachineRepository } from './repositories/machines.js';
import { EventHub } from './events/hub.js';
import { SandboxRecorder } from './sandboxes/recorder.js';
import { SandboxRepository } from './sandboxes/repository.js';
import { RuntimeList } from './sandboxes/runtimes.js';
import { SandboxService } from './sandboxes/service.js';
import { appUrl } from '../lib/contract.js';
import { getAccount, type Account } from '../lib/accounts.js';
import { listEvents } from '../lib/events.js';
import { AssertionKeyStore } from '../lib/identity/assertion-keys.js';
import { requestSeries, type SeriesPoint } from '../lib/metrics/requests.js';
import { usageBetween, usageHistory, type MeterTotals, type UsagePeriod } from '../lib/usage.js';
import { createWebhook, deleteWebhook, listWebhooks, type Webhook } from '../lib/webhooks/store.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'api'>;

/** What the API's handlers work with; built once by assembleServices (in main.ts, or by a test). */
export interface Services {
  config: Config;
  tokens: TokenStore;
  /** Accounts as tokens name them (authentication). */
  accounts: { get(id: string): Promise<Account | undefined> };
  apps: AppRepository;
  /** An app's machine Pods, nodes and logs. */
  machines: MachineRepository;
  env: EnvRepository;
  artifacts: ArtifactStore;
  deploys: DeployStore;
  deployer: Deployer;
  /** Rollback, fork, previews, migrate: decisions beside the deployer. */
  actions: AppActions;
  /** App users, their sessions and sign-in links (shared with ingress-auth through PostgreSQL). */
  auth: { users: AppUserStore; sessions: SessionStore; links: LinkStore };
  /** The account's event log (lib/events.ts). */
  events: { list: (accountId: string, opts: Parameters<typeof listEvents>[2]) => ReturnType<typeof listEvents> };
  /** Followers of event logs in this process (GET /events?follow). */
  eventHub: EventHub;
  usage: { between: (accountId: string, start: Date, end: Date) => Promise<MeterTotals>; history: (accountId: string, now: Date, months: number) => Promise<UsagePeriod[]> };
  webhooks: {
    list: (accountId: string) => Promise<Webhook[]>;
    create: (accountId: string, input: Parameters<typeof createWebhook>[2]) => ReturnType<typeof createWebhook>;
    delete: (accountId: string, id: string) => Promise<boolean>;
  };
  /** Sandboxes, eval and runtimes (api/sandboxes/). */
  sandboxes: SandboxService;
  /** Proxied requests per app, as ingress-auth records them. */
  requestMetrics: { series: (appUid: string, start: Date, end: Date, stepMs: number) => Promise<SeriesPoint[]> };
  /** The identity assertions' public keys, for the machine listener and /_svc/auth/jwks.json. */
  assertionKeys: AssertionKeyStore;
  /** Whether PostgreSQL answers (the health route). */
  database: { ping: () => Promise<void> };
  log: Logger;
  clock: () => Date;
}

/** The Lease of the API replica that records deploy outcomes (api/deploys/recorder.ts). */
export const recorderLease = 'svc-deploy-recorder';

/**
 * Wires the services and starts what runs in the background: the Apps informer (awaited, so
 * handlers read a warm cache) and the deploy recorder. stop() ends them.
 */
export async function assembleServices(deps: {
  config: Config;
  db: Db;
  kc: k8s.KubeConfig;
  tokens: TokenStore;
  log: Logger;
  clock?: () => Date;
  /** The deploy recorder's Lease in kube-system: one per database (tests give each of theirs one). */
  recorderLease?: string;
}): Promise<{ services: Services; kube: { kc: k8s.KubeConfig; core: k8s.CoreV1Api }; db: Db; stop: () => Promise<void> }> {
  const { config, db, kc, tokens, log } = deps;
  const clock = deps.clock ?? (() => new Date());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const hostnames = new HostnameStore(db, config.hostnameHoldMs, clock);
  const apps = new AppRepository(kc, log, { jwksUrl: config.assertion.jwksUrl, issuer: config.assertion.issuer }, { store: hostnames, appsDomain: config.appsDomain });
  await apps.start();
  // A deleted App's hostname is held for its account from now on; the hourly pass catches Apps made
  // before the table existed or deleted while no API ran (lib/hostnames.ts).
  apps.onDelete((app) => {
    hostnames.release(app.metadata.namespace!, app.metadata.name!).catch((err: unknown) => log.warn({ err, app: app.metadata.name }, 'Releasing a hostname failed; the hourly pass retries'));
  });
  const syncHostnames = () => {
    hostnames.reconcile(apps.names()).catch((err: unknown) => log.warn({ err }, 'Reconciling app hostnames failed'));
  };
  syncHostnames();
  const hostnameTimer = setInterval(syncHostnames, 3600_000);
  hostnameTimer.unref();
  const artifacts = new ArtifactStore(config.deploys.artifactDir);
  const deploys = new DeployStore(db, clock);
  // Email invitations go out when a deploy goes live (queued in the outbox; the leader sends them).
  const invitations = new Invitations(db, new MailOutbox(db, { clock }), log, (app) => (app.status?.url ? appUrl(config.site, app.metadata.name!) : undefined), clock);
  const election = new LeaderElection(kc.makeApiClient(k8s.CoordinationV1Api), 'kube-system', deps.recorderLease ?? recorderLease, log);
  const recorder = new DeployRecorder(apps, deploys, election, log, (app) => invitations.sync(app));
  recorder.start();
  const env = new EnvRepository(core, kc.makeApiClient(k8s.CustomObjectsApi));
  const machines = new MachineRepository(kc);
  const deployer = new Deployer(artifacts, deploys, apps, log, config.deploys.artifactBaseUrl);
  const eventHub = new EventHub(db, config.databaseUrl, log);
  const sandboxRepo = new SandboxRepository(kc, log);
  const sandboxRecorder = new SandboxRecorder(db, log);
  sandboxRepo.onChange((sbx) => sandboxRecorder.observe(sbx));
  await sandboxRepo.start();
  // Without the artifact key no agent token can be derived: sandboxes answer 503 (the controllers
  // serve none either, and say so in their log).
  const sandboxes = new SandboxService(sandboxRepo, new RuntimeList(core, config.sandboxes.namespace), db, config.deploys.artifactKey, config.sandboxes, log);
  const services: Services = {
    config,
    tokens,
    accounts: { get: (id) => getAccount(db, id) },
    apps,
    machines,
    env,
    artifacts,
    deploys,
    deployer,
    actions: new AppActions({ apps, env, deploys, deployer, artifacts, machines }),
    auth: { users: new AppUserStore(db, clock), sessions: new SessionStore(db, clock), links: new LinkStore(db, clock) },
    events: { list: (accountId, opts) => listEvents(db, accountId, opts) },
    eventHub,
    usage: { between: (accountId, start, end) => usageBetween(db, accountId, start, end), history: (accountId, now, months) => usageHistory(db, accountId, now, months) },
    webhooks: {
      list: (accountId) => listWebhooks(db, accountId),
      create: (accountId, input) => createWebhook(db, accountId, input),
      delete: (accountId, id) => deleteWebhook(db, accountId, id),
    },
    sandboxes,
    requestMetrics: { series: (appUid, start, end, stepMs) => requestSeries(db, appUid, start, end, stepMs) },
    assertionKeys: new AssertionKeyStore(db, { rotationMs: config.assertion.rotationMs, maxAssertionLifetimeMs: config.assertion.lifetimeSeconds * 1000 }),
    database: { ping: async () => void (await db.raw('select 1')) },
    log,
    clock,
  };
  // Sign-in data of deleted apps and ended sessions leave the database (lib/auth/housekeeping.ts).
  // On the wall clock, not the injectable one: a test that moves its clock months ahead must not
  // have a background sweep delete what it still reads.
  const housekeeping = new AuthHousekeeping(db, apps, log);
  housekeeping.start();
  return {
    services,
    // For set-up (the first account) and tests; handlers work through the repositories above.
    kube: { kc, core },
    db,
    stop: async () => {
      clearInterval(hostnameTimer);
      await recorder.stop();
      await housekeeping.stop();
      await apps.stop();
      await sandboxRepo.stop();
      sandboxes.close();
      await eventHub.stop();
    },
  };
}
