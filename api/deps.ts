import { DataStore } from '../lib/html-data/store.js';
import * as k8s from '@kubernetes/client-node';
import { artifactStoreOf, S3ArtifactStore } from '../lib/artifacts/s3-store.js';
import type { ArtifactStore } from '../lib/artifacts/store.js';
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
import { CliLogins } from './cli-login/logins.js';
import { ConsoleIdp } from './console/idp.js';
import { ConsolePasskeys } from './console/passkeys.js';
import { ConsoleSignIn } from './console/sign-in.js';
import type { TokenStore } from '../lib/tokens/store.js';
import { AppActions } from './deploys/actions.js';
import { DatabaseActions } from './databases/actions.js';
import { VolumeActions } from './volumes/actions.js';
import { AccountLock } from './quotas.js';
import { ArtifactHolds } from '../lib/artifacts/holds.js';
import { AccountStorage } from './storage/account-storage.js';
import { ArtifactCollector } from './storage/collector.js';
import { DomainError } from '../lib/errors.js';
import { storedBytes } from '../lib/databases.js';
import { Deployer } from './deploys/deployer.js';
import { DeployRecorder } from './deploys/recorder.js';
import { AppRepository } from './repositories/apps.js';
import { DatabaseRepository } from './repositories/databases.js';
import { EnvRepository } from './repositories/env.js';
import { MachineRepository } from './repositories/machines.js';
import { EventHub } from './events/hub.js';
import { SandboxRecorder } from './sandboxes/recorder.js';
import { SandboxRepository } from './sandboxes/repository.js';
import { RuntimeList } from './sandboxes/runtimes.js';
import { SandboxService } from './sandboxes/service.js';
import { appUrl, labels, managers } from '../lib/contract.js';
import { kubeStatus, mergePatch } from '../lib/kube/client.js';
import { podInformer } from '../lib/kube/pod-informer.js';
import { VolumeRepository } from './repositories/volumes.js';
import type Koa from 'koa';
import { getBackup, listBackups, type Backup } from '../lib/backups.js';
import { backupEndpoint } from './backups.js';
import { DatabaseReadyRecorder } from './database-events.js';
import { buildEndpoint } from './builds/endpoint.js';
import { BuildRecorder, type DeployOutcome } from './builds/recorder.js';
import { BuildActions } from './builds/actions.js';
import { buildLogStream } from './builds/logs.js';
import { BuildRepository } from './builds/repository.js';
import { BuildStore } from '../lib/builds/store.js';
import { ImportedRepoStore } from '../lib/builds/imported-repos.js';
import type { BuildPlan } from '../lib/builds/plan.js';
import { GitSync } from './builds/imports.js';
import type { Build } from '../lib/resources/index.js';
import { resolverFor, type HostResolver } from '../lib/webhooks/url-guard.js';
import { Resolver } from 'node:dns/promises';
import { checkDomain } from '../lib/domains/check.js';
import { DomainClaims } from '../lib/domains/claims.js';
import { DomainActions } from './domains/actions.js';
import { DomainVerifier } from './domains/verifier.js';
import { DeclaredDomains } from './domains/declared.js';
import { EventRecorder } from '../lib/kube/events.js';
import { NamespaceAccounts } from '../lib/accounts.js';
import { CertificateIssuer } from './certificates/issuer.js';
import { CertManagerIssuer, deleteCertificateSecret } from './certificates/cert-manager.js';
import { certificateSecretName } from '../lib/certificates/contract.js';
import { DomainRepository } from './repositories/domains.js';
import { VolumeMeter } from './usage/volume-meter.js';
import { MachineMeter } from './usage/machine-meter.js';
import { accountIdOfNamespace, getAccount, type Account } from '../lib/accounts.js';
import type { App } from '../lib/resources/index.js';
import type { EventKind } from '../lib/event-kinds.js';
import { eventHorizon, listEvents, purgeEvents, recordEvent } from '../lib/events.js';
import { AssertionKeyStore } from '../lib/identity/assertion-keys.js';
import { requestSeries, type SeriesPoint } from '../lib/metrics/requests.js';
import { hostname } from 'node:os';
import {
  machineSecondsByApp,
  recordStorageSample,
  usageBetween,
  usageHistory,
  chargesBetween,
  type ChargeTotals,
  type Bucket,
  type MeterTotals,
  type UsagePeriod,
} from '../lib/usage.js';
import { WebhookDeliverer } from '../lib/webhooks/deliverer.js';
import { webhookDispatcher } from '../lib/webhooks/guarded-dispatcher.js';
import { WebhookActions } from './webhooks/actions.js';
import { WebhookRepository } from './webhooks/repository.js';
import { readFileSync } from 'node:fs';
import { NameCom } from '../lib/registrar/namecom.js';
import { RegistrarActions } from './registrar/actions.js';
import { RegistrarStore } from './registrar/store.js';
import { DomainRenewer } from './registrar/renewer.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'api'>;

/** What the API's handlers work with; built once by assembleDeps (in main.ts, or by a test). */
export interface ApiDeps {
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
  /** The console's sign-in: mailed one-time links, redeemed for a session's token (api/console/). */
  console: ConsoleSignIn;
  /** Account owners' console passkeys (api/console/passkeys.ts). */
  consolePasskeys: ConsolePasskeys;
  /** Console sign-in at the platform's identity provider; undefined when none is configured (SVC_IDP_ISSUER). */
  consoleIdp: ConsoleIdp | undefined;
  /** `svc login`'s device-code logins, approved in the console (api/cli-login/). */
  cliLogins: CliLogins;
  /** The account's event log (lib/events.ts). */
  events: {
    list: (accountId: string, opts: Parameters<typeof listEvents>[2]) => ReturnType<typeof listEvents>;
    /**
     * Records an event of a change already made in Kubernetes (so not in one transaction with it):
     * a failure is logged, not thrown, since the change stands either way.
     */
    record: (accountId: string, type: EventKind, subject: string, data?: Record<string, unknown>) => Promise<void>;
    /** The highest id purged from the account's log (lib/events.ts). */
    horizon: (accountId: string) => Promise<number>;
    /** Deletes what was recorded before `before` (the hourly purge runs it for the retention window). */
    purge: (before: Date) => Promise<number>;
  };
  /** Followers of event logs in this process (GET /events?follow). */
  eventHub: EventHub;
  usage: {
    between: (accountId: string, start: Date, end: Date) => Promise<MeterTotals>;
    /** What was bought in the period, in minor units by currency (domain orders). */
    charges: (accountId: string, start: Date, end: Date) => Promise<ChargeTotals>;
    byApp: (accountId: string, start: Date, end: Date) => Promise<Record<string, number>>;
    history: (accountId: string, now: Date, count: number, bucket: Bucket) => Promise<UsagePeriod[]>;
    /** A stored_bytes sample of `subject`, now (lib/usage.ts). */
    storage: (accountId: string, subject: string, bytes: number) => Promise<void>;
  };
  /** The account's webhooks and their deliveries (api/webhooks/repository.ts). */
  webhooks: WebhookRepository;
  /** Creating, rotating, enabling, deleting webhooks and resending deliveries: their decisions (api/webhooks/actions.ts). */
  webhookActions: WebhookActions;
  /** Databases and their credentials (api/repositories/databases.ts). */
  databases: DatabaseRepository;
  /** Creating, deleting, backing up, attaching and detaching databases: the data group's decisions (api/databases/actions.ts). */
  databaseActions: DatabaseActions;
  /**
   * The account's storage as its limit counts it (databases, volumes made and declared, stored
   * artifacts), checked and taken under its lock (api/storage/account-storage.ts).
   */
  storage: AccountStorage;
  /** The account's lock, under which every limit is checked and taken (api/quotas.ts). */
  accountLock: AccountLock;
  /** Apps' and databases' volumes (api/repositories/volumes.ts). */
  volumes: VolumeRepository;
  /** Listing volumes and deleting a detached one (api/volumes/actions.ts). */
  volumeActions: VolumeActions;
  /** An app's custom domains (api/domains/actions.ts). */
  domainActions: DomainActions;
  /** Databases' backups (lib/backups.ts) and where backup Jobs send them (api/backups.ts, on the machine listener). */
  backups: {
    list: (accountId: string, database: string) => Promise<Backup[]>;
    get: (accountId: string, id: string) => Promise<Backup | undefined>;
    endpoint: Koa.Middleware;
  };
  /** Builds (api/builds/, lib/builds/): the Build objects, their records, and where builders send results. */
  builds: {
    repo: BuildRepository;
    store: BuildStore;
    core: k8s.CoreV1Api;
    /** Resolves Git hosts for the egress guard (the webhooks' resolver). */
    resolver: HostResolver;
    /** Keeps an app's Git token in a Secret of the account (the clone's only); answers its name. */
    gitSecret: (namespace: string, app: string, token: string) => Promise<string>;
    endpoint: Koa.Middleware;
  };
  /** What the API decides about builds (api/builds/actions.ts). */
  buildActions: BuildActions;
  /** Apps imported from Git (lib/builds/imported-repos.ts) and what builds a pushed branch (api/builds/imports.ts). */
  importedRepos: ImportedRepoStore;
  gitSync: Pick<GitSync, 'onHead'>;
  /** Sandboxes, eval and runtimes (api/sandboxes/). */
  sandboxes: SandboxService;
  /** Account domains through the registrar (api/registrar/); undefined when none is configured (their operations answer 503). */
  registrar: RegistrarActions | undefined;
  /** HTML apps' records (lib/html-data/store.ts): exported by GET /apps/{appID}/data, copied by a fork asked to. */
  htmlData: Pick<DataStore, 'all' | 'size' | 'copyApp'>;
  /** Proxied requests per app, as ingress-auth records them. */
  requestMetrics: { series: (appUid: string, start: Date, end: Date, stepMs: number) => Promise<SeriesPoint[]> };
  /** The identity assertions' public keys, for the machine listener and /_svc/auth/jwks.json. */
  assertionKeys: AssertionKeyStore;
  /** Whether PostgreSQL answers (the health route). */
  database: { ping: () => Promise<void> };
  log: Logger;
  clock: () => Date;
}

/**
 * What runs in the background, apart from request handling: started by assembleDeps and
 * stopped by its stop(); tests reach them to run a pass now or to stop one.
 */
export interface Workers {
  /** Meters app machines' running time (api/usage/machine-meter.ts). */
  machineMeter: MachineMeter;
  /** Sends the webhook outbox from this process (lib/webhooks/deliverer.ts). */
  webhookDeliverer: WebhookDeliverer;
  /** Releases artifacts nothing needs and deletes their files, on a schedule (api/storage/collector.ts). */
  artifactCollector: ArtifactCollector;
  /** Polls imported repositories and builds their new commits (api/builds/imports.ts). */
  gitSync: GitSync;
  /** Checks custom domains' records when they are due (api/domains/verifier.ts). */
  domainVerifier: DomainVerifier;
  /**
   * Orders, renews and sweeps custom domains' certificates (api/certificates/issuer.ts); undefined
   * unless SVC_CERTIFICATES_ISSUER=acme with SVC_ACME_DIRECTORY_URL.
   */
  certificateIssuer: CertificateIssuer | undefined;
  /**
   * Writes cert-manager Certificates for verified domains and mirrors their state
   * (api/certificates/cert-manager.ts); undefined unless SVC_CERTIFICATES_ISSUER=cert-manager.
   */
  certManagerIssuer: CertManagerIssuer | undefined;
  /** Renews auto-renew account domains and tells of expiring ones (api/registrar/renewer.ts); undefined without a registrar. */
  domainRenewer: DomainRenewer | undefined;
  /** Adds and removes the domains Apps declare in spec.domains (api/domains/declared.ts). */
  declaredDomains: DeclaredDomains;
}

/** The Lease of the API replica that records deploy outcomes (api/deploys/recorder.ts). */
export const recorderLease = 'svc-deploy-recorder';

/**
 * Wires the API's dependencies and starts what runs in the background: the Apps informer (awaited, so
 * handlers read a warm cache) and the deploy recorder. stop() ends them.
 */
export async function assembleDeps(deps: {
  config: Config;
  db: Db;
  kc: k8s.KubeConfig;
  tokens: TokenStore;
  log: Logger;
  clock?: () => Date;
  /** The deploy recorder's Lease in kube-system: one per database (tests give each of theirs one). */
  recorderLease?: string;
}): Promise<{
  services: ApiDeps;
  workers: Workers;
  kube: { kc: k8s.KubeConfig; core: k8s.CoreV1Api };
  db: Db;
  stop: () => Promise<void>;
}> {
  const { config, db, kc, tokens, log } = deps;
  const clock = deps.clock ?? (() => new Date());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const hostnames = new HostnameStore(db, config.hostnameHoldMs, clock);
  const apps = new AppRepository(
    kc,
    log,
    { jwksUrl: config.assertion.jwksUrl, issuer: config.assertion.issuer },
    { store: hostnames, appsDomain: config.appsDomain },
  );
  await apps.start();
  // A deleted App's hostname is held for its account from now on; the hourly pass catches Apps made
  // before the table existed or deleted while no API ran (lib/hostnames.ts).
  apps.onDelete((app) => {
    hostnames
      .release(app.metadata.namespace!, app.metadata.name!)
      .catch((err: unknown) => log.warn({ err, app: app.metadata.name }, 'Releasing a hostname failed; the hourly pass retries'));
  });
  const syncHostnames = () => {
    hostnames.reconcile(apps.names()).catch((err: unknown) => log.warn({ err }, 'Reconciling app hostnames failed'));
  };
  syncHostnames();
  // Hourly: hostnames, and the event log's window. The purge runs on the wall clock, not the
  // injectable one: a test that moves its clock months ahead must not lose the events it reads.
  const purgeEventsOnce = () => {
    purgeEvents(db, new Date(Date.now() - config.eventsRetentionMs))
      .then((n) => n && log.info({ events: n, retentionMs: config.eventsRetentionMs }, 'Purged events older than the retention window'))
      .catch((err: unknown) => log.warn({ err }, 'Purging old events failed; the next hour retries'));
  };
  purgeEventsOnce();
  const hostnameTimer = setInterval(() => {
    syncHostnames();
    purgeEventsOnce();
  }, 3600_000);
  hostnameTimer.unref();
  const artifacts = artifactStoreOf(config.deploys);
  // A store it cannot use stops the API at once, saying why (the key pair, the endpoint, the region).
  if (artifacts instanceof S3ArtifactStore) await artifacts.ensureBucket();
  const deploys = new DeployStore(db, clock);
  // Email invitations go out once the spec listing them is rolled out, and links and sessions of an
  // address the controller no longer reports in force are revoked (queued in the outbox; the leader sends them).
  const invitations = new Invitations(
    db,
    new MailOutbox(db, { clock }),
    log,
    (app) => (app.status?.url ? appUrl(config.site, app.metadata.name!) : undefined),
    clock,
  );
  const election = new LeaderElection(kc.makeApiClient(k8s.CoordinationV1Api), 'kube-system', deps.recorderLease ?? recorderLease, log);
  // An App the controllers deleted because its expiry passed (by their clock, the wall clock) is
  // recorded as app.expired by the one replica leading the recorder's Lease.
  const recordExpired = async (app: App) => {
    const expiresAt = app.spec.expiresAt;
    if (!expiresAt || Date.parse(expiresAt) > Date.now()) return;
    const account = await accountIdOfNamespace(db, app.metadata.namespace!);
    if (account) await recordEvent(db, account, 'app.expired', app.metadata.name!, { app: app.metadata.name, expires_at: expiresAt });
  };
  const appDeleted = async (app: App) => {
    invitations.forget(app.metadata.uid!);
    await recordExpired(app);
    // Its HTML data goes with it (lib/auth/housekeeping.ts): its data_bytes end here.
    if (app.spec.data) {
      const account = await accountIdOfNamespace(db, app.metadata.namespace!);
      if (account) await recordStorageSample(db, account, app.metadata.name!, 0, clock(), 'data_bytes');
    }
  };
  const recorder = new DeployRecorder(apps, deploys, election, log, (app) => invitations.sync(app), appDeleted);
  recorder.start();
  const env = new EnvRepository(core, kc.makeApiClient(k8s.CustomObjectsApi));
  const machines = new MachineRepository(kc);
  const eventHub = new EventHub(db, config.databaseUrl, log);
  // One resolver for every name a tenant gives us to reach (webhook URLs, Git hosts): the egress
  // guards' answers then agree with each other.
  const tenantHostResolver = resolverFor(config.webhookDnsServers);
  const sizeOfDatabase = (d: Parameters<typeof storedBytes>[0]) => storedBytes(d, config.databases);
  // Deliveries are due the moment their event commits: the deliverer wakes on the events channel
  // and polls every second besides (an announcement missed while the connection was down).
  const webhookDeliverer = new WebhookDeliverer({
    db,
    log,
    clock,
    dispatcher: webhookDispatcher({
      resolver: tenantHostResolver,
      ...(config.webhookAllowPrivate ? { isAllowed: () => true } : {}),
    }),
  });
  eventHub.onEvent(() => webhookDeliverer.wake());
  webhookDeliverer.start();
  // machine_seconds and machine.* events from the machines' Pods (api/usage/machine-meter.ts).
  const machinePods = podInformer(kc, labels.app, log);
  await machinePods.start();
  const machineMeter = new MachineMeter(db, machinePods, log, clock);
  await machineMeter.start();
  const databases = new DatabaseRepository(kc, log);
  await databases.start();
  new DatabaseReadyRecorder(db, databases.watch, log, clock).start();
  const volumes = new VolumeRepository(kc, machinePods, (node) => machines.nodeSummary(node), log);
  await volumes.start();
  // stored_bytes and volume.* events of apps' volumes (api/usage/volume-meter.ts).
  await new VolumeMeter(db, volumes.informer, log, clock).start();
  // The account's storage: what its limit counts, checked and taken under its lock; and the collector
  // of artifacts nothing needs any more (issue 30 findings 3 and 4).
  const accountLock = new AccountLock(db);
  const holds = new ArtifactHolds(db);
  const storage = new AccountStorage({
    lock: accountLock,
    limitBytes: config.databases.maxBytesPerAccount,
    apps,
    databases,
    databaseBytes: sizeOfDatabase,
    claims: (ns) => volumes.appVolumeClaims(ns),
    holds,
    store: artifacts,
    db,
    clock,
  });
  const artifactCollector = new ArtifactCollector({
    db,
    holds,
    store: artifacts,
    apps,
    policy: config.deploys.artifactRetention,
    log,
    clock,
  });
  storage.reclaim = (accountId) => artifactCollector.reclaim(accountId);
  artifactCollector.start();
  const deployer = new Deployer(artifacts, deploys, apps, log, config.deploys.artifactBaseUrl, config.images, {
    lock: accountLock,
    storage,
  });
  // Builds: their records and events, logs kept and outputs deployed as they end (api/builds/recorder.ts).
  const buildRepo = new BuildRepository(kc, log);
  const buildStore = new BuildStore(db);
  const deployBuild = async (accountId: string, b: Build): Promise<DeployOutcome> => {
    const app = await apps.find(b.metadata.namespace!, b.spec.app);
    if (!app) return { error: `app ${b.spec.app} is gone` };
    const summary = { build: b.metadata.name };
    // A Dockerfile's EXPOSE is the port its service listens on (8080 otherwise, as $PORT says).
    const port = (b.status?.plan as BuildPlan | undefined)?.docker?.port ?? undefined;
    const prepared = b.status?.image
      ? {
          origin: 'build' as const,
          spec: { kind: 'container' as const, image: b.status.image, ...(port ? { port } : {}) },
          summary: { ...summary, image: b.status.image },
        }
      : await deployer.prepareStored(b.status!.artifact!.digest!, 'build', summary, async (staged) => {
          // The output is the account's again if it was released meanwhile (counted and checked).
          if (!(await storage.holdStored(accountId, b.metadata.namespace!, staged.digest, `build ${b.metadata.name}'s output`))) {
            throw new DomainError('not_found', `artifact ${staged.digest} is not in the store`);
          }
        });
    const deploy = await deployer.apply(accountId, app, prepared, { createdBy: `build:${b.metadata.name}` });
    return { deployId: deploy.id };
  };
  const buildRecorder = new BuildRecorder(db, buildStore, core, deployBuild, { artifacts, limitBytes: config.builds.logLimitBytes }, log);
  buildRepo.onChange((b) => buildRecorder.observe(b));
  await buildRepo.start();
  const sandboxRepo = new SandboxRepository(kc, log);
  const sandboxRecorder = new SandboxRecorder(db, log);
  sandboxRepo.onChange((sbx) => sandboxRecorder.observe(sbx));
  await sandboxRepo.start();
  // Without the artifact key no agent token can be derived: sandboxes answer 503 (the controllers
  // serve none either, and say so in their log).
  const sandboxes = new SandboxService({
    sandboxes: sandboxRepo,
    runtimes: new RuntimeList(core, config.sandboxes.namespace),
    agentKey: config.deploys.artifactKey,
    limits: config.sandboxes,
    lock: accountLock,
    recordEvent: (accountId, type, subject, data) => recordEvent(db, accountId, type, subject, data),
    log,
  });
  const actions = new AppActions({
    apps,
    env,
    deploys,
    deployer,
    machines,
    volumes,
    databases,
    quota: {
      lock: accountLock,
      limits: {
        apps: config.quotas.appsPerAccount,
        previewsPerApp: config.quotas.previewsPerApp,
        databases: config.databases.maxPerAccount,
      },
      storage,
      databaseBytes: sizeOfDatabase,
    },
  });
  const events: ApiDeps['events'] = {
    list: (accountId, opts) => listEvents(db, accountId, opts),
    record: (accountId, type, subject, data) =>
      recordEvent(db, accountId, type, subject, data).catch((err: unknown) =>
        log.warn({ err, account: accountId, type, subject }, 'Recording an event failed'),
      ),
    horizon: (accountId) => eventHorizon(db, accountId),
    purge: (before) => purgeEvents(db, before),
  };
  const builds: ApiDeps['builds'] = {
    repo: buildRepo,
    store: buildStore,
    core,
    resolver: tenantHostResolver,
    gitSecret: async (namespace, app, token) => {
      const name = `build-git-${app}`.slice(0, 63);
      const body = { metadata: { name, namespace, labels: { [labels.managedBy]: managers.api } }, stringData: { token } };
      await core.patchNamespacedSecret({ namespace, name, body }, mergePatch).catch(async (err: unknown) => {
        if (kubeStatus(err) !== 404) throw err;
        await core.createNamespacedSecret({ namespace, body });
      });
      return name;
    },
    endpoint: buildEndpoint({
      store: artifacts,
      storage,
      accountOf: (ns) => accountIdOfNamespace(db, ns),
      builds: buildRepo,
      key: config.deploys.artifactKey,
      limitBytes: config.deploys.uploadLimitBytes,
      registry: config.builds.registry,
      baseImage: config.builds.builderImage,
      log,
      clock,
    }),
  };
  const buildActions = new BuildActions({
    builds: buildRepo,
    store: buildStore,
    logs: (build, namespace, follow) =>
      buildLogStream(
        {
          core,
          machines,
          builds: buildRepo,
          store: buildStore,
          artifacts,
          keptDays: Math.round(config.deploys.artifactRetention.buildLogMs / 86_400_000),
        },
        build,
        namespace,
        follow,
      ),
    storage,
    git: {
      secret: builds.gitSecret,
      remote: (token) => ({ token, allowPrivate: config.webhookAllowPrivate, resolver: builds.resolver }),
    },
    settings: { artifactKey: config.deploys.artifactKey, artifactBaseUrl: config.deploys.artifactBaseUrl },
    clock,
  });
  const accounts: ApiDeps['accounts'] = { get: (id) => getAccount(db, id) };
  const importedRepos = new ImportedRepoStore(db);
  // Imported repositories are polled (every API replica takes its share of the due ones).
  const gitSync = new GitSync(
    { apps, builds, actions, events, config, clock, importedRepos, accounts },
    async (namespace, name) => {
      const secret = await core.readNamespacedSecret({ namespace, name }).catch(() => undefined);
      const value = secret?.data?.token;
      return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
    },
    log,
    config.builds.gitPollMs,
  );
  gitSync.start();
  const usage: ApiDeps['usage'] = {
    between: (accountId, start, end) => usageBetween(db, accountId, start, end),
    charges: (accountId, start, end) => chargesBetween(db, accountId, start, end),
    byApp: (accountId, start, end) => machineSecondsByApp(db, accountId, start, end),
    history: (accountId, now, count, bucket) => usageHistory(db, accountId, now, count, bucket),
    storage: (accountId, subject, bytes) => recordStorageSample(db, accountId, subject, bytes, clock()),
  };
  const backups: ApiDeps['backups'] = {
    list: (accountId, database) => listBackups(db, accountId, database),
    get: (accountId, id) => getBackup(db, accountId, id),
    endpoint: backupEndpoint({
      store: artifacts,
      storage,
      db,
      key: config.deploys.artifactKey,
      limitBytes: config.databases.maxBytesPerAccount,
      log,
      clock,
    }),
  };
  const databaseActions = new DatabaseActions({
    databases,
    apps,
    backups,
    quota: { lock: accountLock, limits: { databases: config.databases.maxPerAccount }, storage },
    usage,
    events,
    settings: {
      defaultBytes: config.databases.defaultBytes,
      provider: config.databases.provider,
      cnpg: config.databases.cnpg,
      artifactBaseUrl: config.deploys.artifactBaseUrl,
    },
    clock,
  });
  const webhooks = new WebhookRepository(db);
  const webhookActions = new WebhookActions({
    webhooks,
    quota: { lock: accountLock, limits: { webhooks: config.quotas.webhooksPerAccount } },
    urlGuard: { allowPrivate: config.webhookAllowPrivate, resolver: tenantHostResolver },
    clock,
  });
  const volumeActions = new VolumeActions({ volumes, apps, databases, storage, usage, events });
  // Domains are checked on the wall clock, not the injectable one: their schedule is rows compared
  // with the database's times, and a test's clock standing still would stop every check.
  const wallClock = () => new Date();
  const domains = new DomainRepository(kc, log);
  await domains.start();
  const domainClaims = new DomainClaims(db);
  const domainResolver = new Resolver({ timeout: 3_000, tries: 2 });
  if (config.domains.dnsServers) domainResolver.setServers([...config.domains.dnsServers]);
  // Certificates of verified domains, by ACME (docs/decisions/0028-https.md), on the wall clock too:
  // the budget's rows are compared with the database's times. Made before the domain actions, whose
  // removals delete their certificates.
  const certificateIssuer = CertificateIssuer.enabled(config.certificates)
    ? new CertificateIssuer({
        config: config.certificates,
        core,
        domains,
        db,
        events,
        log,
        clock: wallClock,
        isLeader: () => election.isLeader,
      })
    : undefined;
  certificateIssuer?.start();
  // Or by cert-manager, for platform teams that run it: the API writes its Certificates. Only the
  // replica leading the recorder's Lease acts, or each replica would tell every transition.
  const certManagerIssuer = CertManagerIssuer.enabled(config.certificates)
    ? new CertManagerIssuer({
        config: config.certificates,
        kc,
        core,
        domains,
        db,
        events,
        log,
        isLeader: () => election.isLeader,
        clock: wallClock,
      })
    : undefined;
  await certManagerIssuer?.start();
  const domainActions = new DomainActions({
    domains,
    claims: domainClaims,
    lock: accountLock,
    events,
    // A wildcard's routing is asked at the literal `*` label, which any DNS server answers with the
    // wildcard record itself (RFC 4592): docs/decisions/0027-app-domains.md.
    check: (d, expected) =>
      checkDomain(d, expected, domainResolver, { edgeAddresses: config.domains.edgeAddresses, randomLabel: () => '*' }),
    certificates: {
      // Only the certificate issued for this namespace's Domain: the name may have moved to another
      // account since (a failed claim released), whose certificate has the same Secret name.
      // With cert-manager its Certificate goes first, or cert-manager would write the Secret again.
      remove: (domain, namespace) =>
        certManagerIssuer
          ? certManagerIssuer.remove(domain, namespace)
          : deleteCertificateSecret(core, config.certificates.namespace, certificateSecretName(domain), namespace),
    },
    settings: {
      appsDomain: config.appsDomain,
      edgeAddresses: config.domains.edgeAddresses,
      perApp: config.domains.perApp,
      perAccount: config.domains.perAccount,
      recheckMs: config.domains.recheckMs,
      dns01Zone: config.certificates.issuer === 'acme' ? config.certificates.acme.dns01?.zone : undefined,
    },
    log,
    clock: wallClock,
  });
  const domainVerifier = new DomainVerifier({ claims: domainClaims, actions: domainActions, log, clock: wallClock });
  domainVerifier.start();
  const issuer = certificateIssuer ?? certManagerIssuer;
  if (issuer)
    domains.onChange((d) => {
      if (d.phase === 'Verified' && d.status?.certificate?.phase === undefined) issuer.nudge();
    });
  // Domains declared on Apps with kubectl or GitOps, added and removed through the same actions.
  const namespaceAccounts = new NamespaceAccounts(db);
  const apiEvents = new EventRecorder(core, managers.api, hostname(), log);
  const declaredDomains = new DeclaredDomains({
    apps,
    domains,
    actions: domainActions,
    accountOf: (namespace) => namespaceAccounts.of(namespace),
    recordEvent: (subject, type, reason, message) => apiEvents.record(subject, type, reason, message),
    log,
    isLeader: () => election.isLeader,
  });
  declaredDomains.start();
  // Account domains through the registrar, and their renewer: the recorder's leader renews, on the
  // wall clock (the names' expiries are the registrar's).
  const registrar = config.registrar && registrarOf(config.registrar);
  function registrarOf(c: NonNullable<typeof config.registrar>) {
    const store = new RegistrarStore(db, clock);
    const actions = new RegistrarActions({
      registrar: new NameCom({
        url: c.url,
        username: c.username,
        token: c.token.value ?? readFileSync(c.token.file, 'utf8').trim(),
        timeoutMs: c.timeoutMs,
      }),
      store,
      events,
      config: { tlds: c.tlds, searchCacheMs: c.searchCacheMs, appsDomain: config.appsDomain, settleAfterMs: c.timeoutMs + 60_000 },
      log,
      clock,
    });
    const renewer = new DomainRenewer({
      actions,
      store,
      events,
      mail: new MailOutbox(db, { clock }),
      settings: c.renewer,
      isLeader: () => election.isLeader,
      log,
      clock: wallClock,
    });
    return { actions, renewer };
  }
  registrar?.renewer.start();
  const services: ApiDeps = {
    config,
    tokens,
    accounts,
    apps,
    machines,
    env,
    artifacts,
    deploys,
    deployer,
    actions,
    auth: { users: new AppUserStore(db, clock), sessions: new SessionStore(db, clock), links: new LinkStore(db, clock) },
    console: new ConsoleSignIn({
      db,
      tokens,
      mail: new MailOutbox(db, { clock }),
      perAddressHourly: config.auth.emailRate.perAddressHourly,
      publicUrl: config.api.publicUrl,
      log,
      clock,
    }),
    consolePasskeys: new ConsolePasskeys({ db, mail: new MailOutbox(db, { clock }), publicUrl: config.api.publicUrl, clock }),
    consoleIdp: config.auth.idp
      ? new ConsoleIdp({ db, settings: config.auth.idp, publicUrl: config.api.publicUrl, log, clock })
      : undefined,
    cliLogins: new CliLogins(db, new MailOutbox(db, { clock }), config.api.publicUrl, clock),
    events,
    eventHub,
    usage,
    webhooks,
    webhookActions,
    databases,
    databaseActions,
    storage,
    accountLock,
    volumes,
    volumeActions,
    domainActions,
    backups,
    builds,
    buildActions,
    importedRepos,
    gitSync,
    sandboxes,
    htmlData: new DataStore(db, clock),
    registrar: registrar?.actions,
    requestMetrics: { series: (appUid, start, end, stepMs) => requestSeries(db, appUid, start, end, stepMs) },
    assertionKeys: new AssertionKeyStore(db, {
      rotationMs: config.assertion.rotationMs,
      maxAssertionLifetimeMs: config.assertion.lifetimeSeconds * 1000,
    }),
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
    workers: {
      machineMeter,
      webhookDeliverer,
      artifactCollector,
      gitSync,
      domainVerifier,
      certificateIssuer,
      certManagerIssuer,
      declaredDomains,
      domainRenewer: registrar?.renewer,
    },
    // For set-up (the first account) and tests; handlers work through the repositories above.
    kube: { kc, core },
    db,
    stop: async () => {
      clearInterval(hostnameTimer);
      declaredDomains.stop();
      await domainVerifier.stop();
      await certificateIssuer?.stop();
      await certManagerIssuer?.stop();
      await registrar?.renewer.stop();
      await domains.stop();
      await artifactCollector.stop();
      gitSync.stop();
      await recorder.stop();
      await housekeeping.stop();
      await apps.stop();
      await sandboxRepo.stop();
      await buildRepo.stop();
      await databases.stop();
      await volumes.stop();
      sandboxes.close();
      await webhookDeliverer.stop();
      await machineMeter.stop();
      await machinePods.stop();
      await eventHub.stop();
    },
  };
}
