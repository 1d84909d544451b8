// The one configuration loader. Every component reads its settings from the environment through
// loadConfig(), validated once at start-up; a bad or missing setting stops the process with a
// message naming the variable, instead of failing later somewhere deep.
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { type AppsSite } from './contract.js';

const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

const port = z.coerce.number().int().min(1, 'must be a port 1-65535').max(65535, 'must be a port 1-65535');
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const envSchema = z.object({
  SVC_STATE_DIR: z.string().min(1).default('.svc'),
  SVC_LOG_LEVEL: logLevel.default('info'),
  SVC_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .default('postgres://svc@127.0.0.1:55432/svc'),
  KUBECONFIG: z.string().min(1).optional(),
  // Loopback locally: machines never reach the API itself, only its machine listener below.
  SVC_API_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_API_PORT: port.default(8080),
  // What machines may reach of the platform (artifacts, identity keys), on a listener of its own:
  // locally the nodes' firewall lets pods reach this port of the host and nothing else.
  SVC_API_MACHINE_HOST: z.string().min(1).default('0.0.0.0'),
  SVC_API_MACHINE_PORT: port.default(8079),
  SVC_ADMIN_EMAIL: z.email('must be an email address').default('owner@localhost'),
  SVC_API_SERVICE_ACCOUNT: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, "must be <namespace>:<name> of the API's ServiceAccount")
    .optional(),
  // On a cluster: the Secret (<namespace>/<name>, the chart's <release>-owner-token) the first
  // account's token is written to instead of <stateDir>/owner-token.
  SVC_OWNER_TOKEN_SECRET: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, 'must be <namespace>/<name> of a Secret')
    .optional(),
  SVC_API_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 ** 3)
    .default(1024 * 1024),
  SVC_API_RATE_PER_SECOND: z.coerce.number().positive().default(50),
  SVC_API_RATE_BURST: z.coerce.number().int().min(1).default(100),
  SVC_WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  SVC_WEBHOOK_DNS_SERVERS: z
    .string()
    .regex(/^[^,\s]+(,[^,\s]+)*$/, 'must be a comma-separated list of DNS servers (address or address:port)')
    .optional(),
  SVC_APPS_DOMAIN: z
    .string()
    .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a domain name')
    .default('apps.localhost'),
  SVC_APPS_URL_SUFFIX: z
    .string()
    .regex(/^(:\d{1,5})?$/, 'must be empty or :<port>')
    .default(':8081'),
  SVC_NODES: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be comma-separated node names')
    .default('local-a,local-b'),
  SVC_NODE_POD_SUBNET: z
    .string()
    .regex(/^\d{1,3}\.\d{1,3}\.0\.0\/16$/, 'must be a /16, like 10.244.0.0/16')
    .optional(),
  SVC_ARTIFACT_DIR: z.string().min(1).optional(),
  SVC_ARTIFACT_URL: z
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional(),
  // Empty: none (on a cluster whose nodes reach their pods whatever the policy).
  SVC_MACHINE_PLATFORM_CIDRS: z
    .string()
    .regex(/^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}(,\d{1,3}(\.\d{1,3}){3}\/\d{1,2})*)?$/, 'must be comma-separated IPv4 CIDRs, or empty for none')
    .optional(),
  // On a cluster: the namespace the platform's pods run in (the chart's release namespace), which
  // tenants' NetworkPolicies admit beside SVC_MACHINE_PLATFORM_CIDRS.
  SVC_PLATFORM_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
    .optional(),
  SVC_MACHINE_PLATFORM_PORTS: z
    .string()
    .regex(/^\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?)*$/, 'must be comma-separated ports or port ranges (8079,18000-18099)')
    .refine(
      (v) =>
        v.split(',').every((p) => {
          const [first, last = first] = p.split('-').map(Number) as [number, number?];
          return first >= 1 && last <= 65535 && first <= last;
        }),
      'each port must be 1-65535, and a range must not end before it starts',
    )
    .optional(),
  SVC_HOSTNAME_HOLD_DAYS: z.coerce.number().min(0).max(3650).default(30),
  SVC_EVENTS_RETENTION_DAYS: z.coerce.number().min(1).max(3650).default(30),
  SVC_IMAGE_POSTGRES: z.string().min(1).default('svc/postgres:latest'),
  SVC_DATABASE_STORAGE_CLASS: z.string().optional(),
  SVC_DATABASE_DEFAULT_BYTES: z.coerce.number().int().min(1048576).default(1073741824),
  SVC_DATABASE_MAX_PER_ACCOUNT: z.coerce.number().int().min(0).max(10_000).default(5),
  SVC_ACCOUNT_MAX_APPS: z.coerce.number().int().min(1).max(1_000_000).default(100),
  SVC_APP_MAX_PREVIEWS: z.coerce.number().int().min(0).max(10_000).default(20),
  SVC_ACCOUNT_MAX_TOKENS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  SVC_ACCOUNT_MAX_WEBHOOKS: z.coerce.number().int().min(0).max(10_000).default(25),
  SVC_DATABASE_PROVIDER: z.enum(['pods', 'cloudnative-pg']).default('pods'),
  SVC_DATABASE_CNPG_IMAGE: z.string().optional(),
  SVC_DATABASE_CNPG_OPERATOR_NAMESPACE: z.string().default('cnpg-system'),
  SVC_DATABASE_BACKUP_SCHEDULE: z
    .string()
    .regex(/^(\S+\s+){4}\S+$/, 'must be a cron schedule of five fields (minute hour day-of-month month day-of-week)')
    .default('30 3 * * *'),
  SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(0)
    .default(20 * 1073741824),
  SVC_ARTIFACT_KEY: z.string().min(32, 'must be at least 32 characters (a random secret)').optional(),
  SVC_ARTIFACT_KEY_FILE: z.string().min(1).optional(),
  SVC_DEPLOY_UPLOAD_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(8 * 1024 ** 3)
    .default(256 * 1024 ** 2),
  // What the artifact collector keeps, and how often it runs (docs/decisions/0024-artifact-retention.md).
  SVC_ARTIFACT_ROLLBACK_DEPLOYS: z.coerce.number().int().min(0).max(1000).default(10),
  SVC_ARTIFACT_GRACE_MINUTES: z.coerce
    .number()
    .min(1)
    .max(7 * 24 * 60)
    .default(60),
  SVC_ARTIFACT_BUILD_GRACE_HOURS: z.coerce
    .number()
    .min(0)
    .max(90 * 24)
    .default(24),
  SVC_ARTIFACT_COLLECT_MINUTES: z.coerce
    .number()
    .min(1)
    .max(24 * 60)
    .default(15),
  SVC_RUNTIME_IMAGE: z.string().min(1).default('svc/runtime:latest'),
  SVC_IMAGE_BUILDER: z.string().min(1).default('svc/builder:latest'),
  SVC_BUILD_REGISTRY: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9.-]*(:\d{1,5})?(\/[a-z0-9._-]+)*$/, 'must be a registry host[:port][/path] (127.0.0.1:5000)')
    .optional(),
  // Registries tenants' images may come from; unset or empty: any public registry (lib/images/registry-policy.ts).
  SVC_IMAGE_REGISTRIES: z
    .string()
    .regex(
      /^(\s*(\*|\*\.[a-zA-Z0-9.-]+|[a-zA-Z0-9][a-zA-Z0-9.-]*(:\d{1,5})?|\[[0-9a-fA-F:.]+\](:\d{1,5})?)\s*(,\s*(\*|\*\.[a-zA-Z0-9.-]+|[a-zA-Z0-9][a-zA-Z0-9.-]*(:\d{1,5})?|\[[0-9a-fA-F:.]+\](:\d{1,5})?)\s*)*)?$/,
      'must be comma-separated registries: host[:port], *.example.com, or * for any public registry',
    )
    .optional(),
  // The platform registry's token service (registry-auth/, docs/decisions/0025-registry-auth.md).
  SVC_REGISTRY_AUTH_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_REGISTRY_AUTH_PORT: port.default(5001),
  SVC_REGISTRY_TOKEN_KEY_FILE: z.string().min(1).optional(),
  SVC_REGISTRY_TOKEN_CERT_FILE: z.string().min(1).optional(),
  SVC_REGISTRY_CLIENTS_FILE: z.string().min(1).optional(),
  SVC_REGISTRY_SERVICE: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9._:-]*$/, 'must be a service name (letters, digits, . _ : -)')
    .default('svc-registry'),
  SVC_REGISTRY_TOKEN_ISSUER: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9._:-]*$/, 'must be an issuer name (letters, digits, . _ : -)')
    .default('svc-registry-auth'),
  SVC_REGISTRY_TOKEN_SECONDS: z.coerce.number().int().min(60, 'must be 60-3600 seconds').max(3600, 'must be 60-3600 seconds').default(300),
  SVC_BUILD_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1048576)
    .default(2 * 1073741824),
  SVC_BUILD_CPU: z
    .string()
    .regex(/^\d+(\.\d+)?m?$/, 'must be a CPU quantity (1, 500m)')
    .default('1'),
  SVC_BUILD_MEMORY: z
    .string()
    .regex(/^\d+(Ki|Mi|Gi)?$/, 'must be a memory quantity (2Gi)')
    .default('2Gi'),
  SVC_BUILD_PRIVATE_CIDRS: z
    .string()
    .regex(/^[0-9./,]+$/, 'must be comma-separated CIDRs')
    .optional(),
  SVC_BUILD_LOG_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(4096)
    .max(64 * 1048576)
    .default(4 * 1048576),
  SVC_GIT_POLL_SECONDS: z.coerce.number().min(1).max(86_400).default(60),
  SVC_SANDBOX_IMAGE: z.string().min(1).default('svc/sandbox:latest'),
  SVC_SANDBOX_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
    .default('svc-sandboxes'),
  SVC_SANDBOX_RUNTIME_CLASS: z
    .string()
    .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/, 'must be a RuntimeClass name, or empty for none')
    .default('svc-sandbox'),
  SVC_SANDBOX_POOL_SIZE: z.coerce.number().int().min(0).max(1000).default(2),
  SVC_SANDBOX_RETENTION_HOURS: z.coerce
    .number()
    .min(0.001)
    .max(24 * 90)
    .default(24),
  SVC_SANDBOX_MAX_OPEN: z.coerce.number().int().min(1).max(10_000).default(10),
  SVC_SANDBOX_EXEC_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  SVC_SANDBOX_OUTPUT_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 ** 2)
    .default(1024 ** 2),
  SVC_ROLLOUT_DEADLINE_SECONDS: z.coerce.number().int().min(5).max(3600).default(120),
  SVC_VOLUME_STORAGE_CLASS: z.string().optional(),
  SVC_CONTROLLERS_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_CONTROLLERS_METRICS_PORT: port.default(8082),
  SVC_PROXY_HOST: z.string().min(1).default('0.0.0.0'),
  SVC_PROXY_PORT: port.default(8081),
  SVC_PROXY_UPSTREAM_CONNECTIONS: z.coerce.number().int().min(1).max(10_000).default(256),
  SVC_PROXY_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  SVC_PROXY_WORKERS: z.coerce.number().int().min(1, 'must be 1-64').max(64, 'must be 1-64').optional(),
  SVC_ASSERTION_ISSUER: z
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional(),
  SVC_ASSERTION_JWKS_URL: z
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional(),
  SVC_ASSERTION_LIFETIME_SECONDS: z.coerce.number().int().min(30, 'must be 30-900 seconds').max(900, 'must be 30-900 seconds').default(300),
  SVC_ASSERTION_ROTATION_HOURS: z.coerce
    .number()
    .int()
    .min(1, 'must be 1-8760 hours')
    .max(8760, 'must be 1-8760 hours')
    .default(7 * 24),
  SVC_AUTH_HOST: z
    .string()
    .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a host name')
    .optional(),
  SVC_AUTH_SECURE_COOKIES: bool.default(false),
  SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY: z.coerce.number().int().min(1).max(1000).default(5),
  SVC_AUTH_EMAIL_PER_SOURCE_HOURLY: z.coerce.number().int().min(1).max(100_000).default(30),
  SVC_SMTP_URL: z
    .url()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional(),
  SVC_MAIL_FROM: z.string().min(3).optional(),
  SVC_IDP_ISSUER: z
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional(),
  SVC_IDP_CLIENT_ID: z.string().min(1).optional(),
  SVC_IDP_CLIENT_SECRET: z.string().min(1).optional(),
  SVC_CODEHOST_URL: z
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .default('https://github.com'),
  SVC_CODEHOST_API_URL: z
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .default('https://api.github.com'),
  SVC_CODEHOST_CLIENT_ID: z.string().min(1).optional(),
  SVC_CODEHOST_CLIENT_SECRET: z.string().min(1).optional(),
});

export interface Config {
  /** Where local state lives: kubeconfig, tokens, data of the local platform. */
  readonly stateDir: string;
  readonly logLevel: z.infer<typeof logLevel>;
  readonly databaseUrl: string;
  /**
   * Path of the kubeconfig to use. Defaults to `<stateDir>/kubeconfig` when that is the local
   * platform's; undefined means in-cluster credentials (or the client's default loading rules).
   */
  readonly kubeconfig: string | undefined;
  readonly api: {
    readonly host: string;
    readonly port: number;
    /** The machine listener: GET /artifacts/... and the identity keys, nothing else (api/machine.ts). */
    readonly machineHost: string;
    readonly machinePort: number;
    /** The first account, created on first start with an empty database. */
    readonly adminEmail: string;
    /**
     * The API's ServiceAccount on a cluster (the chart's svc-api): each account namespace gets a
     * RoleBinding granting it that namespace's Secrets (svc-api-tenant). Unset locally, where the
     * API uses the admin kubeconfig.
     */
    readonly serviceAccount: { readonly namespace: string; readonly name: string } | undefined;
    /**
     * Where the first account's token goes on a cluster: a Secret the chart made (empty) and lets
     * the API patch, read by the platform team with kubectl. Unset: <stateDir>/owner-token.
     */
    readonly ownerTokenSecret: { readonly namespace: string; readonly name: string } | undefined;
    readonly bodyLimitBytes: number;
    /** Per-token request rate: a token bucket refilled at perSecond, holding burst. */
    readonly rate: { readonly perSecond: number; readonly burst: number };
  };
  /** App hostnames are <app>.<appsDomain>; URLs add appsUrlSuffix (the proxy's port locally). */
  readonly appsDomain: string;
  readonly appsUrlSuffix: string;
  /** The same, with whether app hostnames are served over https: what appUrl() (lib/contract.ts) takes. */
  readonly site: AppsSite;
  /** How long a deleted app's hostname stays held for its account (lib/hostnames.ts). */
  readonly hostnameHoldMs: number;
  /** How long the event log keeps an event; a cursor before what is kept is answered 410 (lib/events.ts). */
  readonly eventsRetentionMs: number;
  /** Databases' servers (controllers/database/): their image, volume class and default size. */
  readonly databases: {
    readonly image: string;
    readonly storageClass: string | undefined;
    readonly defaultBytes: number;
    /** Per account: databases at once, and bytes of their volumes together (403 quota_exceeded beyond). */
    readonly maxPerAccount: number;
    readonly maxBytesPerAccount: number;
    /** When each database's logical backup runs (a CronJob schedule, the cluster's time zone). */
    readonly backupSchedule: string;
    /** What serves a Database that names none (docs/decisions/0017-databases.md#the-cloudnative-pg-provider). */
    readonly provider: 'pods' | 'cloudnative-pg';
    /** The CloudNativePG operand image (its Cluster's imageName; unset: the operator's default) and the operator's namespace. */
    readonly cnpg: { readonly image: string | undefined; readonly operatorNamespace: string };
  };
  /** Builds (controllers/build/, builder/, api/builds/): docs/api/builds.md. */
  readonly builds: {
    readonly builderImage: string;
    /** Where images built for services are pushed (`host:port[/path]`); unset: services cannot be built. */
    readonly registry: string | undefined;
    /** Each app's dependency cache claim. */
    readonly cacheBytes: number;
    readonly cpu: string;
    readonly memory: string;
    /** What a build may not reach: private, shared and link-local ranges (the cluster's pods, Services, nodes, the metadata address). */
    readonly privateCidrs: readonly string[];
    /** A build's log kept after its Job, up to this many bytes (its end, when longer). */
    readonly logLimitBytes: number;
    /** How often imported repositories are asked for their branches (pushes a webhook did not tell). */
    readonly gitPollMs: number;
  };
  /**
   * Which registries tenants' images may come from (lib/images/registry-policy.ts): the allow-list
   * (undefined: any public registry) and the platform's own registry, always allowed.
   */
  readonly images: {
    readonly allowed: readonly string[] | undefined;
    readonly platformRegistry: string | undefined;
  };
  /**
   * The platform registry's token service (registry-auth/): where it listens (the registry's realm,
   * on the host), the key it signs with and that key's certificate (the registry's rootcertbundle),
   * the clients file (the operator's and the nodes' password hashes), and its tokens' names and life.
   */
  readonly registryAuth: {
    readonly host: string;
    readonly port: number;
    readonly keyFile: string;
    readonly certFile: string;
    readonly clientsFile: string;
    readonly service: string;
    readonly issuer: string;
    readonly tokenSeconds: number;
  };
  /**
   * Where the platform is as machines see it, for each App's NetworkPolicy: the addresses
   * ingress-auth and probes come from and the machine listener is on, and that listener's ports.
   */
  readonly machineNetwork: {
    readonly platformCidrs: readonly string[];
    /** On a cluster, the namespace the platform's pods run in (lib/kube/platform-peers.ts). */
    readonly platformNamespace: string | undefined;
    readonly platformPorts: ReadonlyArray<{ port: number; endPort?: number }>;
  };
  /** Allow webhook URLs on loopback and private networks (tests and local development only). */
  readonly webhookAllowPrivate: boolean;
  /** The DNS servers webhook hosts are resolved with (and checked against the URL guard); default the system's. */
  readonly webhookDnsServers: readonly string[] | undefined;
  readonly deploys: {
    /** Where the API keeps content-addressed artifacts (a shared volume when replicated). */
    readonly artifactDir: string;
    /**
     * The artifact endpoint's base URL as machines reach it; `<base>/sha256:<hex>` is one artifact.
     * Locally pods reach the host at the pod bridge's gateway (netns) or on loopback.
     */
    readonly artifactBaseUrl: string;
    /**
     * The secret that mints (controllers) and checks (API) machines' artifact credentials
     * (lib/artifacts/credential.ts): SVC_ARTIFACT_KEY, else the file SVC_ARTIFACT_KEY_FILE, else
     * `<stateDir>/artifact-key` when it exists (hack/dev.sh makes it). Without one, no artifact is served.
     */
    readonly artifactKey: Buffer | undefined;
    /** Largest .tar.gz a deploy may upload. */
    readonly uploadLimitBytes: number;
    /**
     * What the artifact collector keeps besides what Apps, previews, builds in progress and backups
     * need (docs/decisions/0024-artifact-retention.md): each App's newest `rollbackDeploys` live
     * deploys; anything stored or reused within `graceMs`; an ended build's undeployed output for
     * `buildGraceMs`. It runs every `collectEveryMs`, in one API replica at a time.
     */
    readonly artifactRetention: {
      readonly rollbackDeploys: number;
      readonly graceMs: number;
      readonly buildGraceMs: number;
      readonly collectEveryMs: number;
    };
    /** The image that serves static, HTML and Markdown apps (node-agent maps svc/runtime to runtime/). */
    readonly runtimeImage: string;
    /** A rollout whose new machines are not ready by then fails, and the previous deploy stays. */
    readonly rolloutDeadlineSeconds: number;
    /** The StorageClass of apps' volume claims (docs/decisions/0018-volumes.md); undefined: the cluster's default. */
    readonly volumeStorageClass: string | undefined;
  };
  /**
   * Per-account counts (403 quota_exceeded beyond), each checked and taken under the account's
   * lock (api/quotas.ts): apps (previews included), previews per app, live tokens, webhooks.
   */
  readonly quotas: {
    readonly appsPerAccount: number;
    readonly previewsPerApp: number;
    readonly tokensPerAccount: number;
    readonly webhooksPerAccount: number;
  };
  /** Sandboxes and eval (docs/api/sandboxes.md, docs/decisions/0016-sandboxes.md). */
  readonly sandboxes: {
    /** The image every sandbox runs: the runtimes and the agent (hack/images.sh, svc/sandbox). */
    readonly image: string;
    /** Where sandbox pods run (the pool's and claimed ones), apart from every account's namespace. */
    readonly namespace: string;
    /** The RuntimeClass of sandbox pods; undefined for the cluster's default runtime. */
    readonly runtimeClass: string | undefined;
    /** Ready pods kept waiting for a claim. */
    readonly poolSize: number;
    /** How long an ended sandbox's record stays readable. */
    readonly retentionMs: number;
    /** Per account: sandboxes open at once (429 beyond), and execs per minute. */
    readonly maxOpenPerAccount: number;
    readonly execPerMinute: number;
    /** Most bytes of stdout and of stderr an exec answers (the rest is counted and dropped). */
    readonly outputLimitBytes: number;
  };
  /** The controllers' /metrics and /healthz listener. */
  readonly controllersMetrics: { readonly host: string; readonly port: number };
  /** ingress-auth: the proxy on every app hostname. */
  readonly proxy: {
    readonly host: string;
    readonly port: number;
    /** Keep-alive connections to one machine at most. */
    readonly upstreamConnections: number;
    /** A machine that has not answered with headers by then gets the client a 504. */
    readonly upstreamTimeoutMs: number;
    /** Processes sharing the port (SO_REUSEPORT); default: the CPUs this process may run on. */
    readonly workers: number;
  };
  /** The identity assertions (X-Svc-Auth-Assertion) ingress-auth signs for apps. */
  readonly assertion: {
    /** `iss` of every assertion. Default: http://<appsDomain><appsUrlSuffix>/_svc/auth. */
    readonly issuer: string;
    /**
     * Where machines fetch the assertion keys to verify identity headers (the runtime does; container
     * services may): the API serves them at /_svc/auth/jwks.json. Default: that path on the API as
     * machines reach it (the origin of the artifact URL).
     */
    readonly jwksUrl: string;
    /** `exp - iat` of an assertion, and how long a replaced key stays in the JWKS after it stops signing. */
    readonly lifetimeSeconds: number;
    /** How long one key signs before a new one takes over. */
    readonly rotationMs: number;
  };
  /** Sign-in on app hostnames (ingress-auth) and its providers. */
  readonly auth: {
    /**
     * The platform's own sign-in host, where identity providers send their callbacks (one redirect
     * URI to register, not one per app). Default: login.<appsDomain>; the API refuses it as an app name.
     */
    readonly host: string;
    /** Cookies get `Secure` and the `__Host-` prefix: set when app hostnames are served over https. */
    readonly secureCookies: boolean;
    /** Sign-in links the login page sends: per address and per source address, each per hour. */
    readonly emailRate: { readonly perAddressHourly: number; readonly perSourceHourly: number };
    /** OpenID Connect provider of `idp` policies; undefined when not configured. */
    readonly idp: { readonly issuer: string; readonly clientId: string; readonly clientSecret: string } | undefined;
    /** OAuth2 code-hosting provider of `codehost` policies (GitHub's API shape); undefined when not configured. */
    readonly codehost:
      { readonly url: string; readonly apiUrl: string; readonly clientId: string; readonly clientSecret: string } | undefined;
  };
  /** Outgoing mail (sign-in links): SMTP through nodemailer; undefined smtpUrl keeps mail queued. */
  readonly mail: { readonly smtpUrl: string | undefined; readonly from: string };
  /** The local platform's nodes (hack/nodes.sh), for the parts that run on their host. */
  readonly nodes: {
    readonly names: readonly string[];
    /** The first two octets of the /16 pods' addresses come from; node i has x.y.<i>.0/24. */
    readonly podSubnetPrefix: string;
  };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  opts: { exists?: (file: string) => boolean } = {},
): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = issue.path.join('.');
        const got = env[name];
        return `${name}: ${issue.message}${got === undefined ? '' : ` (got ${JSON.stringify(got)})`}`;
      }),
    );
  }
  const e = parsed.data;
  const pairs: Array<[string, unknown, string[]]> = [
    ['SVC_IDP_ISSUER', e.SVC_IDP_ISSUER, ['SVC_IDP_CLIENT_ID', 'SVC_IDP_CLIENT_SECRET']],
    ['SVC_CODEHOST_CLIENT_ID', e.SVC_CODEHOST_CLIENT_ID, ['SVC_CODEHOST_CLIENT_SECRET']],
  ];
  const missing = pairs.flatMap(([name, set, needs]) =>
    set === undefined ? [] : needs.filter((n) => !env[n]).map((n) => `${n}: required when ${name} is set`),
  );
  if (missing.length) throw new ConfigError(missing);
  const stateDir = path.resolve(e.SVC_STATE_DIR);
  const localKubeconfig = path.join(stateDir, 'kubeconfig');
  const exists = opts.exists ?? existsSync;
  const podSubnetPrefix = (e.SVC_NODE_POD_SUBNET ?? '10.244.0.0/16').split('.').slice(0, 2).join('.');
  const keyFile = e.SVC_ARTIFACT_KEY_FILE ?? path.join(stateDir, 'artifact-key');
  if (e.SVC_ARTIFACT_KEY_FILE !== undefined && !exists(keyFile))
    throw new ConfigError([`SVC_ARTIFACT_KEY_FILE: ${keyFile} does not exist`]);
  const artifactKey =
    e.SVC_ARTIFACT_KEY !== undefined ? Buffer.from(e.SVC_ARTIFACT_KEY) : exists(keyFile) ? readFileSync(keyFile) : undefined;
  if (artifactKey !== undefined && artifactKey.length < 32)
    throw new ConfigError([`SVC_ARTIFACT_KEY_FILE: ${keyFile} holds fewer than 32 bytes`]);
  // Pods reach the host at the first node's bridge gateway, x.y.0.1 (hack/nodes.sh).
  const artifactBaseUrl = (e.SVC_ARTIFACT_URL ?? `http://${podSubnetPrefix}.0.1:${e.SVC_API_MACHINE_PORT}/artifacts`).replace(/\/+$/, '');
  return Object.freeze({
    stateDir,
    logLevel: e.SVC_LOG_LEVEL,
    databaseUrl: e.SVC_DATABASE_URL,
    kubeconfig: e.KUBECONFIG ?? (exists(localKubeconfig) ? localKubeconfig : undefined),
    api: Object.freeze({
      host: e.SVC_API_HOST,
      port: e.SVC_API_PORT,
      machineHost: e.SVC_API_MACHINE_HOST,
      machinePort: e.SVC_API_MACHINE_PORT,
      adminEmail: e.SVC_ADMIN_EMAIL,
      serviceAccount: e.SVC_API_SERVICE_ACCOUNT
        ? Object.freeze({ namespace: e.SVC_API_SERVICE_ACCOUNT.split(':')[0]!, name: e.SVC_API_SERVICE_ACCOUNT.split(':')[1]! })
        : undefined,
      ownerTokenSecret: e.SVC_OWNER_TOKEN_SECRET
        ? Object.freeze({ namespace: e.SVC_OWNER_TOKEN_SECRET.split('/')[0]!, name: e.SVC_OWNER_TOKEN_SECRET.split('/')[1]! })
        : undefined,
      bodyLimitBytes: e.SVC_API_BODY_LIMIT_BYTES,
      rate: Object.freeze({ perSecond: e.SVC_API_RATE_PER_SECOND, burst: e.SVC_API_RATE_BURST }),
    }),
    machineNetwork: Object.freeze({
      // Locally the host reaches pods from each node's bridge gateway, x.y.<i>.1 (hack/nodes.sh).
      platformCidrs: Object.freeze(
        e.SVC_MACHINE_PLATFORM_CIDRS !== undefined
          ? e.SVC_MACHINE_PLATFORM_CIDRS.split(',').filter(Boolean)
          : e.SVC_NODES.split(',').map((_, i) => `${podSubnetPrefix}.${i}.1/32`),
      ),
      platformNamespace: e.SVC_PLATFORM_NAMESPACE,
      platformPorts: Object.freeze(
        (e.SVC_MACHINE_PLATFORM_PORTS ?? String(e.SVC_API_MACHINE_PORT)).split(',').map((p) => {
          const [port, endPort] = p.split('-').map(Number) as [number, number | undefined];
          return endPort ? { port, endPort } : { port };
        }),
      ),
    }),
    webhookAllowPrivate: e.SVC_WEBHOOK_ALLOW_PRIVATE,
    webhookDnsServers: e.SVC_WEBHOOK_DNS_SERVERS ? Object.freeze(e.SVC_WEBHOOK_DNS_SERVERS.split(',')) : undefined,
    deploys: Object.freeze({
      artifactDir: path.resolve(e.SVC_ARTIFACT_DIR ?? path.join(stateDir, 'artifacts')),
      artifactBaseUrl,
      artifactKey,
      uploadLimitBytes: e.SVC_DEPLOY_UPLOAD_LIMIT_BYTES,
      artifactRetention: Object.freeze({
        rollbackDeploys: e.SVC_ARTIFACT_ROLLBACK_DEPLOYS,
        graceMs: Math.round(e.SVC_ARTIFACT_GRACE_MINUTES * 60_000),
        buildGraceMs: Math.round(e.SVC_ARTIFACT_BUILD_GRACE_HOURS * 3600_000),
        collectEveryMs: Math.round(e.SVC_ARTIFACT_COLLECT_MINUTES * 60_000),
      }),
      runtimeImage: e.SVC_RUNTIME_IMAGE,
      rolloutDeadlineSeconds: e.SVC_ROLLOUT_DEADLINE_SECONDS,
      volumeStorageClass: e.SVC_VOLUME_STORAGE_CLASS || undefined,
    }),
    quotas: Object.freeze({
      appsPerAccount: e.SVC_ACCOUNT_MAX_APPS,
      previewsPerApp: e.SVC_APP_MAX_PREVIEWS,
      tokensPerAccount: e.SVC_ACCOUNT_MAX_TOKENS,
      webhooksPerAccount: e.SVC_ACCOUNT_MAX_WEBHOOKS,
    }),
    sandboxes: Object.freeze({
      image: e.SVC_SANDBOX_IMAGE,
      namespace: e.SVC_SANDBOX_NAMESPACE,
      runtimeClass: e.SVC_SANDBOX_RUNTIME_CLASS || undefined,
      poolSize: e.SVC_SANDBOX_POOL_SIZE,
      retentionMs: Math.round(e.SVC_SANDBOX_RETENTION_HOURS * 3600_000),
      maxOpenPerAccount: e.SVC_SANDBOX_MAX_OPEN,
      execPerMinute: e.SVC_SANDBOX_EXEC_PER_MINUTE,
      outputLimitBytes: e.SVC_SANDBOX_OUTPUT_LIMIT_BYTES,
    }),
    appsDomain: e.SVC_APPS_DOMAIN,
    appsUrlSuffix: e.SVC_APPS_URL_SUFFIX,
    // Secure cookies need https, so they are what says app hostnames are served over it.
    site: Object.freeze({ appsDomain: e.SVC_APPS_DOMAIN, appsUrlSuffix: e.SVC_APPS_URL_SUFFIX, secure: e.SVC_AUTH_SECURE_COOKIES }),
    hostnameHoldMs: e.SVC_HOSTNAME_HOLD_DAYS * 86_400_000,
    eventsRetentionMs: e.SVC_EVENTS_RETENTION_DAYS * 86_400_000,
    databases: Object.freeze({
      image: e.SVC_IMAGE_POSTGRES,
      storageClass: e.SVC_DATABASE_STORAGE_CLASS || undefined,
      defaultBytes: e.SVC_DATABASE_DEFAULT_BYTES,
      maxPerAccount: e.SVC_DATABASE_MAX_PER_ACCOUNT,
      maxBytesPerAccount: e.SVC_STORAGE_MAX_BYTES_PER_ACCOUNT,
      backupSchedule: e.SVC_DATABASE_BACKUP_SCHEDULE,
      provider: e.SVC_DATABASE_PROVIDER,
      cnpg: Object.freeze({ image: e.SVC_DATABASE_CNPG_IMAGE || undefined, operatorNamespace: e.SVC_DATABASE_CNPG_OPERATOR_NAMESPACE }),
    }),
    builds: Object.freeze({
      builderImage: e.SVC_IMAGE_BUILDER,
      registry: e.SVC_BUILD_REGISTRY || undefined,
      cacheBytes: e.SVC_BUILD_CACHE_BYTES,
      cpu: e.SVC_BUILD_CPU,
      memory: e.SVC_BUILD_MEMORY,
      // Every private, shared and link-local range: pods, Services, nodes (their kubelets), the
      // metadata address, whatever the cluster's own ranges are.
      privateCidrs: Object.freeze(
        e.SVC_BUILD_PRIVATE_CIDRS?.split(',') ?? ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
      ),
      logLimitBytes: e.SVC_BUILD_LOG_LIMIT_BYTES,
      gitPollMs: e.SVC_GIT_POLL_SECONDS * 1000,
    }),
    images: Object.freeze({
      allowed: e.SVC_IMAGE_REGISTRIES?.trim() ? Object.freeze(e.SVC_IMAGE_REGISTRIES.split(',').map((r) => r.trim())) : undefined,
      // The registry part of SVC_BUILD_REGISTRY (it may name a path under it).
      platformRegistry: e.SVC_BUILD_REGISTRY ? e.SVC_BUILD_REGISTRY.split('/')[0] : undefined,
    }),
    registryAuth: Object.freeze({
      host: e.SVC_REGISTRY_AUTH_HOST,
      port: e.SVC_REGISTRY_AUTH_PORT,
      // hack/certs.sh makes the key and certificate, hack/nodes.sh the clients file.
      keyFile: path.resolve(e.SVC_REGISTRY_TOKEN_KEY_FILE ?? path.join(stateDir, 'pki', 'registry-token.key')),
      certFile: path.resolve(e.SVC_REGISTRY_TOKEN_CERT_FILE ?? path.join(stateDir, 'pki', 'registry-token.crt')),
      clientsFile: path.resolve(e.SVC_REGISTRY_CLIENTS_FILE ?? path.join(stateDir, 'registry-auth', 'clients')),
      service: e.SVC_REGISTRY_SERVICE,
      issuer: e.SVC_REGISTRY_TOKEN_ISSUER,
      tokenSeconds: e.SVC_REGISTRY_TOKEN_SECONDS,
    }),
    controllersMetrics: Object.freeze({ host: e.SVC_CONTROLLERS_METRICS_HOST, port: e.SVC_CONTROLLERS_METRICS_PORT }),
    proxy: Object.freeze({
      host: e.SVC_PROXY_HOST,
      port: e.SVC_PROXY_PORT,
      upstreamConnections: e.SVC_PROXY_UPSTREAM_CONNECTIONS,
      upstreamTimeoutMs: e.SVC_PROXY_UPSTREAM_TIMEOUT_MS,
      workers: e.SVC_PROXY_WORKERS ?? availableParallelism(),
    }),
    assertion: Object.freeze({
      issuer: (e.SVC_ASSERTION_ISSUER ?? `http://${e.SVC_APPS_DOMAIN}${e.SVC_APPS_URL_SUFFIX}/_svc/auth`).replace(/\/+$/, ''),
      jwksUrl: e.SVC_ASSERTION_JWKS_URL ?? `${new URL(artifactBaseUrl).origin}/_svc/auth/jwks.json`,
      lifetimeSeconds: e.SVC_ASSERTION_LIFETIME_SECONDS,
      rotationMs: e.SVC_ASSERTION_ROTATION_HOURS * 3600_000,
    }),
    auth: Object.freeze({
      host: e.SVC_AUTH_HOST ?? `login.${e.SVC_APPS_DOMAIN}`,
      secureCookies: e.SVC_AUTH_SECURE_COOKIES,
      emailRate: Object.freeze({
        perAddressHourly: e.SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY,
        perSourceHourly: e.SVC_AUTH_EMAIL_PER_SOURCE_HOURLY,
      }),
      idp: e.SVC_IDP_ISSUER
        ? Object.freeze({ issuer: e.SVC_IDP_ISSUER, clientId: e.SVC_IDP_CLIENT_ID!, clientSecret: e.SVC_IDP_CLIENT_SECRET! })
        : undefined,
      codehost: e.SVC_CODEHOST_CLIENT_ID
        ? Object.freeze({
            url: e.SVC_CODEHOST_URL.replace(/\/+$/, ''),
            apiUrl: e.SVC_CODEHOST_API_URL.replace(/\/+$/, ''),
            clientId: e.SVC_CODEHOST_CLIENT_ID,
            clientSecret: e.SVC_CODEHOST_CLIENT_SECRET!,
          })
        : undefined,
    }),
    mail: Object.freeze({ smtpUrl: e.SVC_SMTP_URL, from: e.SVC_MAIL_FROM ?? `Sign-in <no-reply@${e.SVC_APPS_DOMAIN}>` }),
    nodes: Object.freeze({ names: Object.freeze(e.SVC_NODES.split(',')), podSubnetPrefix }),
  });
}

type EnvName = keyof z.infer<typeof envSchema>;

/**
 * The variables each part of the configuration is made from. A process reads only the parts it
 * names (`components` below), so only their variables are validated: a bad value in a variable
 * another process reads does not stop this one, and cannot change it.
 */
const readsOf = {
  stateDir: ['SVC_STATE_DIR'],
  logLevel: ['SVC_LOG_LEVEL'],
  databaseUrl: ['SVC_DATABASE_URL'],
  kubeconfig: ['KUBECONFIG', 'SVC_STATE_DIR'],
  api: [
    'SVC_API_HOST',
    'SVC_API_PORT',
    'SVC_API_MACHINE_HOST',
    'SVC_API_MACHINE_PORT',
    'SVC_ADMIN_EMAIL',
    'SVC_API_SERVICE_ACCOUNT',
    'SVC_OWNER_TOKEN_SECRET',
    'SVC_API_BODY_LIMIT_BYTES',
    'SVC_API_RATE_PER_SECOND',
    'SVC_API_RATE_BURST',
  ],
  appsDomain: ['SVC_APPS_DOMAIN'],
  appsUrlSuffix: ['SVC_APPS_URL_SUFFIX'],
  site: ['SVC_APPS_DOMAIN', 'SVC_APPS_URL_SUFFIX', 'SVC_AUTH_SECURE_COOKIES'],
  hostnameHoldMs: ['SVC_HOSTNAME_HOLD_DAYS'],
  eventsRetentionMs: ['SVC_EVENTS_RETENTION_DAYS'],
  databases: [
    'SVC_IMAGE_POSTGRES',
    'SVC_DATABASE_STORAGE_CLASS',
    'SVC_DATABASE_DEFAULT_BYTES',
    'SVC_DATABASE_MAX_PER_ACCOUNT',
    'SVC_STORAGE_MAX_BYTES_PER_ACCOUNT',
    'SVC_DATABASE_BACKUP_SCHEDULE',
    'SVC_DATABASE_PROVIDER',
    'SVC_DATABASE_CNPG_IMAGE',
    'SVC_DATABASE_CNPG_OPERATOR_NAMESPACE',
  ],
  builds: [
    'SVC_IMAGE_BUILDER',
    'SVC_BUILD_REGISTRY',
    'SVC_BUILD_CACHE_BYTES',
    'SVC_BUILD_CPU',
    'SVC_BUILD_MEMORY',
    'SVC_BUILD_PRIVATE_CIDRS',
    'SVC_BUILD_LOG_LIMIT_BYTES',
    'SVC_GIT_POLL_SECONDS',
  ],
  images: ['SVC_IMAGE_REGISTRIES', 'SVC_BUILD_REGISTRY'],
  registryAuth: [
    'SVC_REGISTRY_AUTH_HOST',
    'SVC_REGISTRY_AUTH_PORT',
    'SVC_REGISTRY_TOKEN_KEY_FILE',
    'SVC_REGISTRY_TOKEN_CERT_FILE',
    'SVC_REGISTRY_CLIENTS_FILE',
    'SVC_REGISTRY_SERVICE',
    'SVC_REGISTRY_TOKEN_ISSUER',
    'SVC_REGISTRY_TOKEN_SECONDS',
    'SVC_STATE_DIR',
  ],
  machineNetwork: [
    'SVC_MACHINE_PLATFORM_CIDRS',
    'SVC_PLATFORM_NAMESPACE',
    'SVC_MACHINE_PLATFORM_PORTS',
    'SVC_NODES',
    'SVC_NODE_POD_SUBNET',
    'SVC_API_MACHINE_PORT',
  ],
  webhookAllowPrivate: ['SVC_WEBHOOK_ALLOW_PRIVATE'],
  webhookDnsServers: ['SVC_WEBHOOK_DNS_SERVERS'],
  deploys: [
    'SVC_ARTIFACT_DIR',
    'SVC_ARTIFACT_URL',
    'SVC_ARTIFACT_KEY',
    'SVC_ARTIFACT_KEY_FILE',
    'SVC_STATE_DIR',
    'SVC_NODE_POD_SUBNET',
    'SVC_API_MACHINE_PORT',
    'SVC_DEPLOY_UPLOAD_LIMIT_BYTES',
    'SVC_ARTIFACT_ROLLBACK_DEPLOYS',
    'SVC_ARTIFACT_GRACE_MINUTES',
    'SVC_ARTIFACT_BUILD_GRACE_HOURS',
    'SVC_ARTIFACT_COLLECT_MINUTES',
    'SVC_RUNTIME_IMAGE',
    'SVC_ROLLOUT_DEADLINE_SECONDS',
    'SVC_VOLUME_STORAGE_CLASS',
  ],
  quotas: ['SVC_ACCOUNT_MAX_APPS', 'SVC_APP_MAX_PREVIEWS', 'SVC_ACCOUNT_MAX_TOKENS', 'SVC_ACCOUNT_MAX_WEBHOOKS'],
  sandboxes: [
    'SVC_SANDBOX_IMAGE',
    'SVC_SANDBOX_NAMESPACE',
    'SVC_SANDBOX_RUNTIME_CLASS',
    'SVC_SANDBOX_POOL_SIZE',
    'SVC_SANDBOX_RETENTION_HOURS',
    'SVC_SANDBOX_MAX_OPEN',
    'SVC_SANDBOX_EXEC_PER_MINUTE',
    'SVC_SANDBOX_OUTPUT_LIMIT_BYTES',
  ],
  controllersMetrics: ['SVC_CONTROLLERS_METRICS_HOST', 'SVC_CONTROLLERS_METRICS_PORT'],
  proxy: ['SVC_PROXY_HOST', 'SVC_PROXY_PORT', 'SVC_PROXY_UPSTREAM_CONNECTIONS', 'SVC_PROXY_UPSTREAM_TIMEOUT_MS', 'SVC_PROXY_WORKERS'],
  assertion: [
    'SVC_ASSERTION_ISSUER',
    'SVC_ASSERTION_JWKS_URL',
    'SVC_ASSERTION_LIFETIME_SECONDS',
    'SVC_ASSERTION_ROTATION_HOURS',
    'SVC_APPS_DOMAIN',
    'SVC_APPS_URL_SUFFIX',
    'SVC_ARTIFACT_URL',
    'SVC_NODE_POD_SUBNET',
    'SVC_API_MACHINE_PORT',
  ],
  auth: [
    'SVC_AUTH_HOST',
    'SVC_AUTH_SECURE_COOKIES',
    'SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY',
    'SVC_AUTH_EMAIL_PER_SOURCE_HOURLY',
    'SVC_APPS_DOMAIN',
    'SVC_IDP_ISSUER',
    'SVC_IDP_CLIENT_ID',
    'SVC_IDP_CLIENT_SECRET',
    'SVC_CODEHOST_URL',
    'SVC_CODEHOST_API_URL',
    'SVC_CODEHOST_CLIENT_ID',
    'SVC_CODEHOST_CLIENT_SECRET',
  ],
  mail: ['SVC_SMTP_URL', 'SVC_MAIL_FROM', 'SVC_APPS_DOMAIN'],
  nodes: ['SVC_NODES', 'SVC_NODE_POD_SUBNET'],
} as const satisfies { [K in keyof Config]: readonly EnvName[] };

/** The parts of the configuration each process reads. */
export const components = {
  api: [
    'stateDir',
    'logLevel',
    'databaseUrl',
    'kubeconfig',
    'api',
    'appsDomain',
    'appsUrlSuffix',
    'site',
    'hostnameHoldMs',
    'eventsRetentionMs',
    'webhookAllowPrivate',
    'webhookDnsServers',
    'deploys',
    'quotas',
    'sandboxes',
    'databases',
    'builds',
    'images',
    'assertion',
    'auth',
    'mail',
  ],
  controllers: [
    'logLevel',
    'kubeconfig',
    'site',
    'deploys',
    'sandboxes',
    'databases',
    'builds',
    'images',
    'assertion',
    'machineNetwork',
    'controllersMetrics',
  ],
  'ingress-auth': ['logLevel', 'databaseUrl', 'kubeconfig', 'appsDomain', 'appsUrlSuffix', 'site', 'proxy', 'assertion', 'auth', 'mail'],
  'policy-agent': ['logLevel', 'kubeconfig'],
  'local-volumes': ['stateDir', 'logLevel', 'kubeconfig', 'nodes'],
  // The artifact key (deploys) checks build credentials.
  'registry-auth': ['logLevel', 'kubeconfig', 'registryAuth', 'deploys'],
} as const satisfies Record<string, ReadonlyArray<keyof Config>>;

export type Component = keyof typeof components;
export type ComponentConfig<C extends Component> = Pick<Config, (typeof components)[C][number]>;

/**
 * The configuration of one process: only the variables it reads are looked at (and validated);
 * the parts it does not read are not even in the type it gets.
 */
export function loadComponentConfig<C extends Component>(
  component: C,
  env: Record<string, string | undefined> = process.env,
  opts: { exists?: (file: string) => boolean } = {},
): ComponentConfig<C> {
  const reads = new Set<string>(components[component].flatMap((part) => readsOf[part]));
  const own = Object.fromEntries(Object.entries(env).filter(([name]) => reads.has(name) || !(name in envSchema.shape)));
  const full = loadConfig(own, opts);
  return Object.freeze(Object.fromEntries(components[component].map((part) => [part, full[part]]))) as ComponentConfig<C>;
}

/** For a component's entry point: its configuration, or a clear message and exit code 1. */
export function loadConfigOrExit<C extends Component>(component: C): ComponentConfig<C> {
  try {
    return loadComponentConfig(component);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`${component}: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
}
