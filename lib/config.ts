// The one configuration loader. Every component reads its settings from the environment through
// loadConfig(), validated once at start-up; a bad or missing setting stops the process with a
// message naming the variable, instead of failing later somewhere deep.
//
// To add a variable: give its schema in the `env` of the part it configures and read it in that part's `read`;
// a part that reads another part's variable names it in `uses`. The env schema, Config and readsOf follow.
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { type AppsSite } from './contract.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const port = z.coerce.number().int().min(1, 'must be a port 1-65535').max(65535, 'must be a port 1-65535');
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const httpUrl = z.url().regex(/^https?:\/\//, 'must be an http(s) URL');

// A part of the configuration (one property of Config) is declared once, in three pieces:
//   env:  the variables it owns, each with its schema (what is accepted, the default);
//   uses: the variables of other parts it reads too, each with the part that owns it;
//   read: its value, made from those variables only (typed by them, and handed nothing else).
// From the parts follow the whole environment's schema, the Config type, and what each reads.

type Shape = { readonly [name: string]: z.ZodType };
type Uses = { readonly [name: string]: { readonly env: Shape } };
/** What a part's read gets: the parsed values of its own variables and of those it uses. */
type Vars<S extends Shape, U extends Uses> = {
  readonly [K in keyof S | keyof U]: K extends keyof S
    ? z.output<S[K]>
    : K extends keyof U
      ? K extends keyof U[K]['env']
        ? z.output<U[K]['env'][K]>
        : never
      : never;
};
/** What a part's read may consult besides its variables. */
interface Context {
  /** Whether a file exists (tests answer for the file system). */
  readonly exists: (file: string) => boolean;
}

interface Part<S extends Shape, U extends Uses, T> {
  readonly env: S;
  readonly uses: U;
  /** When a variable named here is set, each one listed must be set too. */
  readonly requires: { readonly [K in keyof S]?: ReadonlyArray<keyof S & string> };
  readonly read: (e: Vars<S, U>, ctx: Context) => T;
}

type None = Record<never, never>;

// The constraint on U: the part `uses` names for a variable has that variable in its env.
function part<
  S extends Shape = None,
  T = unknown,
  U extends Uses & { readonly [K in keyof U]: { readonly env: { readonly [P in K]: z.ZodType } } } = None,
>(p: { env?: S; uses?: U; requires?: Part<S, U, T>['requires']; read: (e: Vars<S, U>, ctx: Context) => T }): Part<S, U, T> {
  return { env: {} as S, uses: {} as U, requires: {}, ...p };
}

// What several parts derive alike (each part that does names the variables in its `uses`).
const stateDirOf = (e: { readonly SVC_STATE_DIR: string }) => path.resolve(e.SVC_STATE_DIR);
const podSubnetPrefixOf = (e: { readonly SVC_NODE_POD_SUBNET: string | undefined }) =>
  (e.SVC_NODE_POD_SUBNET ?? '10.244.0.0/16').split('.').slice(0, 2).join('.');
// Pods reach the host at the first node's bridge gateway, x.y.0.1 (hack/nodes.sh).
/** The artifacts' object store from SVC_ARTIFACT_S3_*: all of endpoint, bucket and key pair, or none. */
function objectStoreOf(e: {
  SVC_ARTIFACT_S3_ENDPOINT?: string | undefined;
  SVC_ARTIFACT_S3_BUCKET?: string | undefined;
  SVC_ARTIFACT_S3_REGION: string;
  SVC_ARTIFACT_S3_PREFIX: string;
  SVC_ARTIFACT_S3_ACCESS_KEY_ID?: string | undefined;
  SVC_ARTIFACT_S3_SECRET_ACCESS_KEY?: string | undefined;
  SVC_ARTIFACT_S3_PATH_STYLE: 'true' | 'false';
}) {
  const named = {
    SVC_ARTIFACT_S3_ENDPOINT: e.SVC_ARTIFACT_S3_ENDPOINT,
    SVC_ARTIFACT_S3_BUCKET: e.SVC_ARTIFACT_S3_BUCKET,
    SVC_ARTIFACT_S3_ACCESS_KEY_ID: e.SVC_ARTIFACT_S3_ACCESS_KEY_ID,
    SVC_ARTIFACT_S3_SECRET_ACCESS_KEY: e.SVC_ARTIFACT_S3_SECRET_ACCESS_KEY,
  };
  const missing = Object.entries(named).filter(([, v]) => v === undefined);
  if (missing.length === Object.keys(named).length) return undefined;
  if (missing.length)
    throw new ConfigError(
      missing.map(
        ([k]) =>
          `${k}: required with ${Object.keys(named)
            .filter((n) => !missing.some(([m]) => m === n))
            .join(', ')}`,
      ),
    );
  return Object.freeze({
    endpoint: e.SVC_ARTIFACT_S3_ENDPOINT!,
    bucket: e.SVC_ARTIFACT_S3_BUCKET!,
    region: e.SVC_ARTIFACT_S3_REGION,
    prefix: e.SVC_ARTIFACT_S3_PREFIX,
    accessKeyId: e.SVC_ARTIFACT_S3_ACCESS_KEY_ID!,
    secretAccessKey: e.SVC_ARTIFACT_S3_SECRET_ACCESS_KEY!,
    pathStyle: e.SVC_ARTIFACT_S3_PATH_STYLE === 'true',
  });
}

const artifactBaseUrlOf = (e: {
  readonly SVC_ARTIFACT_URL: string | undefined;
  readonly SVC_NODE_POD_SUBNET: string | undefined;
  readonly SVC_API_MACHINE_PORT: number;
}) => (e.SVC_ARTIFACT_URL ?? `http://${podSubnetPrefixOf(e)}.0.1:${e.SVC_API_MACHINE_PORT}/artifacts`).replace(/\/+$/, '');

// The parts, each after those whose variables it uses; `parts` below puts them in Config's order,
// each with its doc comment (the doc comments of a part's fields are on them, in its read).

const stateDir = part({
  env: { SVC_STATE_DIR: z.string().min(1).default('.svc') },
  read: (e) => stateDirOf(e),
});

const logLevel = part({
  env: { SVC_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') },
  read: (e) => e.SVC_LOG_LEVEL,
});

const databaseUrl = part({
  env: {
    SVC_DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .default('postgres://svc@127.0.0.1:55432/svc'),
  },
  read: (e) => e.SVC_DATABASE_URL,
});

const kubeconfig = part({
  env: { KUBECONFIG: z.string().min(1).optional() },
  uses: { SVC_STATE_DIR: stateDir },
  read: (e, { exists }) => {
    const localKubeconfig = path.join(stateDirOf(e), 'kubeconfig');
    return e.KUBECONFIG ?? (exists(localKubeconfig) ? localKubeconfig : undefined);
  },
});

/** A listener's host as a URL names it: a wildcard address as loopback, an IPv6 one in brackets. */
function listenerHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

const api = part({
  env: {
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
    // Where people reach the API (and the console at /console/): the origin mailed console sign-in
    // links point at. Never taken from a request's Host, which whoever sends it chooses.
    SVC_API_PUBLIC_URL: z
      .url()
      .regex(/^https?:\/\/[^/?#]+\/?$/, 'must be an http(s) origin, e.g. https://api.example.com')
      .optional(),
    // How many proxies in front of the API append to X-Forwarded-For (a load balancer, an ingress
    // controller): the client's address (rate limits per address) is that many entries from the
    // end, and X-Forwarded-Proto/-Host are believed. 0 (the default): the connection's own.
    SVC_API_PROXY_HOPS: z.coerce.number().int().min(0).max(5).default(0),
  },
  read: (e) =>
    Object.freeze({
      host: e.SVC_API_HOST,
      port: e.SVC_API_PORT,
      /** The API's public origin (no trailing slash): SVC_API_PUBLIC_URL, else its own listener's. */
      publicUrl: new URL(e.SVC_API_PUBLIC_URL ?? `http://${listenerHost(e.SVC_API_HOST)}:${e.SVC_API_PORT}`).origin,
      /** Trusted proxies in front of the API (SVC_API_PROXY_HOPS): Koa's app.proxy and maxIpsCount. */
      proxyHops: e.SVC_API_PROXY_HOPS,
      /** The machine listener: GET /artifacts/... and the identity keys, nothing else (api/machine.ts). */
      machineHost: e.SVC_API_MACHINE_HOST,
      machinePort: e.SVC_API_MACHINE_PORT,
      /** The first account, created on first start with an empty database. */
      adminEmail: e.SVC_ADMIN_EMAIL,
      /**
       * The API's ServiceAccount on a cluster (the chart's svc-api): each account namespace gets a
       * RoleBinding granting it that namespace's Secrets (svc-api-tenant). Unset locally, where the
       * API uses the admin kubeconfig.
       */
      serviceAccount: e.SVC_API_SERVICE_ACCOUNT
        ? Object.freeze({ namespace: e.SVC_API_SERVICE_ACCOUNT.split(':')[0]!, name: e.SVC_API_SERVICE_ACCOUNT.split(':')[1]! })
        : undefined,
      /**
       * Where the first account's token goes on a cluster: a Secret the chart made (empty) and lets
       * the API patch, read by the platform team with kubectl. Unset: <stateDir>/owner-token.
       */
      ownerTokenSecret: e.SVC_OWNER_TOKEN_SECRET
        ? Object.freeze({ namespace: e.SVC_OWNER_TOKEN_SECRET.split('/')[0]!, name: e.SVC_OWNER_TOKEN_SECRET.split('/')[1]! })
        : undefined,
      bodyLimitBytes: e.SVC_API_BODY_LIMIT_BYTES,
      /** Per-token request rate: a token bucket refilled at perSecond, holding burst. */
      rate: Object.freeze({ perSecond: e.SVC_API_RATE_PER_SECOND, burst: e.SVC_API_RATE_BURST }),
    }),
});

const nodes = part({
  env: {
    SVC_NODES: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be comma-separated node names')
      .default('local-a,local-b'),
    SVC_NODE_POD_SUBNET: z
      .string()
      .regex(/^\d{1,3}\.\d{1,3}\.0\.0\/16$/, 'must be a /16, like 10.244.0.0/16')
      .optional(),
  },
  read: (e) =>
    Object.freeze({
      names: Object.freeze(e.SVC_NODES.split(',')),
      /** The first two octets of the /16 pods' addresses come from; node i has x.y.<i>.0/24. */
      podSubnetPrefix: podSubnetPrefixOf(e),
    }),
});

const appsDomain = part({
  env: {
    SVC_APPS_DOMAIN: z
      .string()
      .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a domain name')
      .default('apps.localhost'),
  },
  read: (e) => e.SVC_APPS_DOMAIN,
});

const appsUrlSuffix = part({
  env: {
    SVC_APPS_URL_SUFFIX: z
      .string()
      .regex(/^(:\d{1,5})?$/, 'must be empty or :<port>')
      .default(':8081'),
  },
  read: (e) => e.SVC_APPS_URL_SUFFIX,
});

const hostnameHoldMs = part({
  env: { SVC_HOSTNAME_HOLD_DAYS: z.coerce.number().min(0).max(3650).default(30) },
  read: (e) => e.SVC_HOSTNAME_HOLD_DAYS * 86_400_000,
});

const eventsRetentionMs = part({
  env: { SVC_EVENTS_RETENTION_DAYS: z.coerce.number().min(1).max(3650).default(30) },
  read: (e) => e.SVC_EVENTS_RETENTION_DAYS * 86_400_000,
});

const databases = part({
  env: {
    SVC_IMAGE_POSTGRES: z.string().min(1).default('svc/postgres:latest'),
    SVC_DATABASE_STORAGE_CLASS: z.string().optional(),
    SVC_DATABASE_DEFAULT_BYTES: z.coerce.number().int().min(1048576).default(1073741824),
    SVC_DATABASE_MAX_PER_ACCOUNT: z.coerce.number().int().min(0).max(10_000).default(5),
    SVC_STORAGE_MAX_BYTES_PER_ACCOUNT: z.coerce
      .number()
      .int()
      .min(0)
      .default(20 * 1073741824),
    SVC_DATABASE_BACKUP_SCHEDULE: z
      .string()
      .regex(/^(\S+\s+){4}\S+$/, 'must be a cron schedule of five fields (minute hour day-of-month month day-of-week)')
      .default('30 3 * * *'),
    SVC_DATABASE_PROVIDER: z.enum(['pods', 'cloudnative-pg']).default('pods'),
    SVC_DATABASE_CNPG_IMAGE: z.string().optional(),
    SVC_DATABASE_CNPG_OPERATOR_NAMESPACE: z.string().default('cnpg-system'),
    // A primary and a standby by default: failover is why a platform team runs CloudNativePG.
    SVC_DATABASE_CNPG_INSTANCES: z.coerce.number().int().min(1).max(9).default(2),
  },
  read: (e) =>
    Object.freeze({
      image: e.SVC_IMAGE_POSTGRES,
      storageClass: e.SVC_DATABASE_STORAGE_CLASS || undefined,
      defaultBytes: e.SVC_DATABASE_DEFAULT_BYTES,
      /** Per account: databases at once, and bytes of their volumes together (403 quota_exceeded beyond). */
      maxPerAccount: e.SVC_DATABASE_MAX_PER_ACCOUNT,
      maxBytesPerAccount: e.SVC_STORAGE_MAX_BYTES_PER_ACCOUNT,
      /** When each database's logical backup runs (a CronJob schedule, the cluster's time zone). */
      backupSchedule: e.SVC_DATABASE_BACKUP_SCHEDULE,
      /** What serves a Database that names none (docs/decisions/0017-databases.md#the-cloudnative-pg-provider). */
      provider: e.SVC_DATABASE_PROVIDER,
      /**
       * The CloudNativePG operand image (its Cluster's imageName; unset: the operator's default), the
       * operator's namespace, and how many instances a Cluster has (one primary, the others standbys).
       */
      cnpg: Object.freeze({
        image: e.SVC_DATABASE_CNPG_IMAGE || undefined,
        operatorNamespace: e.SVC_DATABASE_CNPG_OPERATOR_NAMESPACE,
        instances: e.SVC_DATABASE_CNPG_INSTANCES,
      }),
    }),
});

const builds = part({
  env: {
    SVC_IMAGE_BUILDER: z.string().min(1).default('svc/builder:latest'),
    SVC_BUILD_REGISTRY: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9.-]*(:\d{1,5})?(\/[a-z0-9._-]+)*$/, 'must be a registry host[:port][/path] (127.0.0.1:5000)')
      .optional(),
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
  },
  read: (e) =>
    Object.freeze({
      builderImage: e.SVC_IMAGE_BUILDER,
      /** Where images built for services are pushed (`host:port[/path]`); unset: services cannot be built. */
      registry: e.SVC_BUILD_REGISTRY || undefined,
      /** Each app's dependency cache claim. */
      cacheBytes: e.SVC_BUILD_CACHE_BYTES,
      cpu: e.SVC_BUILD_CPU,
      memory: e.SVC_BUILD_MEMORY,
      // Every private, shared and link-local range: pods, Services, nodes (their kubelets), the
      // metadata address, whatever the cluster's own ranges are.
      /** What a build may not reach: private, shared and link-local ranges (the cluster's pods, Services, nodes, the metadata address). */
      privateCidrs: Object.freeze(
        e.SVC_BUILD_PRIVATE_CIDRS?.split(',') ?? ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
      ),
      /** A build's log kept after its Job, up to this many bytes (its end, when longer). */
      logLimitBytes: e.SVC_BUILD_LOG_LIMIT_BYTES,
      /** How often imported repositories are asked for their branches (pushes a webhook did not tell). */
      gitPollMs: e.SVC_GIT_POLL_SECONDS * 1000,
    }),
});

const images = part({
  env: {
    // Registries tenants' images may come from; unset or empty: any public registry (lib/images/registry-policy.ts).
    SVC_IMAGE_REGISTRIES: z
      .string()
      .regex(
        /^(\s*(\*|\*\.[a-zA-Z0-9.-]+|[a-zA-Z0-9][a-zA-Z0-9.-]*(:\d{1,5})?|\[[0-9a-fA-F:.]+\](:\d{1,5})?)\s*(,\s*(\*|\*\.[a-zA-Z0-9.-]+|[a-zA-Z0-9][a-zA-Z0-9.-]*(:\d{1,5})?|\[[0-9a-fA-F:.]+\](:\d{1,5})?)\s*)*)?$/,
        'must be comma-separated registries: host[:port], *.example.com, or * for any public registry',
      )
      .optional(),
  },
  uses: { SVC_BUILD_REGISTRY: builds },
  read: (e) =>
    Object.freeze({
      allowed: e.SVC_IMAGE_REGISTRIES?.trim() ? Object.freeze(e.SVC_IMAGE_REGISTRIES.split(',').map((r) => r.trim())) : undefined,
      // The registry part of SVC_BUILD_REGISTRY (it may name a path under it).
      platformRegistry: e.SVC_BUILD_REGISTRY ? e.SVC_BUILD_REGISTRY.split('/')[0] : undefined,
    }),
});

const registryAuth = part({
  // The platform registry's token service (registry-auth/, docs/decisions/0025-registry-auth.md).
  env: {
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
    SVC_REGISTRY_TOKEN_SECONDS: z.coerce
      .number()
      .int()
      .min(60, 'must be 60-3600 seconds')
      .max(3600, 'must be 60-3600 seconds')
      .default(300),
  },
  uses: { SVC_STATE_DIR: stateDir },
  read: (e) =>
    Object.freeze({
      host: e.SVC_REGISTRY_AUTH_HOST,
      port: e.SVC_REGISTRY_AUTH_PORT,
      // hack/certs.sh makes the key and certificate, hack/nodes.sh the clients file.
      keyFile: path.resolve(e.SVC_REGISTRY_TOKEN_KEY_FILE ?? path.join(stateDirOf(e), 'pki', 'registry-token.key')),
      certFile: path.resolve(e.SVC_REGISTRY_TOKEN_CERT_FILE ?? path.join(stateDirOf(e), 'pki', 'registry-token.crt')),
      clientsFile: path.resolve(e.SVC_REGISTRY_CLIENTS_FILE ?? path.join(stateDirOf(e), 'registry-auth', 'clients')),
      service: e.SVC_REGISTRY_SERVICE,
      issuer: e.SVC_REGISTRY_TOKEN_ISSUER,
      tokenSeconds: e.SVC_REGISTRY_TOKEN_SECONDS,
    }),
});

const machineNetwork = part({
  env: {
    // Empty: none (on a cluster whose nodes reach their pods whatever the policy).
    SVC_MACHINE_PLATFORM_CIDRS: z
      .string()
      .regex(
        /^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}(,\d{1,3}(\.\d{1,3}){3}\/\d{1,2})*)?$/,
        'must be comma-separated IPv4 CIDRs, or empty for none',
      )
      .optional(),
    // On a cluster: the namespace the platform's pods run in (the chart's release namespace), which
    // tenants' NetworkPolicies admit beside SVC_MACHINE_PLATFORM_CIDRS.
    SVC_PLATFORM_NAMESPACE: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
      .optional(),
    // Whether machines may ask the cluster DNS (kube-system, k8s-app=kube-dns). Only where it answers
    // for the cluster's names alone: one that forwards outward is a way out for data, one with
    // reverse zones names other accounts' Services (docs/decisions/0037-cluster-dns.md).
    SVC_MACHINE_CLUSTER_DNS: bool.default(true),
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
  },
  uses: { SVC_NODES: nodes, SVC_NODE_POD_SUBNET: nodes, SVC_API_MACHINE_PORT: api },
  read: (e) =>
    Object.freeze({
      // Locally the host reaches pods from each node's bridge gateway, x.y.<i>.1 (hack/nodes.sh).
      platformCidrs: Object.freeze(
        e.SVC_MACHINE_PLATFORM_CIDRS !== undefined
          ? e.SVC_MACHINE_PLATFORM_CIDRS.split(',').filter(Boolean)
          : e.SVC_NODES.split(',').map((_, i) => `${podSubnetPrefixOf(e)}.${i}.1/32`),
      ),
      /** On a cluster, the namespace the platform's pods run in (lib/kube/platform-peers.ts). */
      platformNamespace: e.SVC_PLATFORM_NAMESPACE,
      clusterDns: e.SVC_MACHINE_CLUSTER_DNS,
      platformPorts: Object.freeze(
        (e.SVC_MACHINE_PLATFORM_PORTS ?? String(e.SVC_API_MACHINE_PORT)).split(',').map((p): { port: number; endPort?: number } => {
          const [port, endPort] = p.split('-').map(Number) as [number, number | undefined];
          return endPort ? { port, endPort } : { port };
        }),
      ),
    }),
});

const userNamespaces = part({
  env: { SVC_USER_NAMESPACES: bool.default(true) },
  read: (e) => e.SVC_USER_NAMESPACES,
});

const webhookAllowPrivate = part({
  env: { SVC_WEBHOOK_ALLOW_PRIVATE: bool.default(false) },
  read: (e) => e.SVC_WEBHOOK_ALLOW_PRIVATE,
});

const webhookDnsServers = part({
  env: {
    SVC_WEBHOOK_DNS_SERVERS: z
      .string()
      .regex(/^[^,\s]+(,[^,\s]+)*$/, 'must be a comma-separated list of DNS servers (address or address:port)')
      .optional(),
  },
  read: (e) => (e.SVC_WEBHOOK_DNS_SERVERS ? Object.freeze(e.SVC_WEBHOOK_DNS_SERVERS.split(',')) : undefined),
});

// Custom domains (docs/decisions/0027-app-domains.md): whose DNS answers count, where an apex
// points, how many names, and how often a verified name is checked again.
const domains = part({
  env: {
    SVC_DOMAINS_DNS_SERVERS: z
      .string()
      .regex(/^[^,\s]+(,[^,\s]+)*$/, 'must be a comma-separated list of DNS servers (address or address:port)')
      .optional(),
    SVC_DOMAINS_EDGE_ADDRESSES: z
      .string()
      .refine(
        (v) => v === '' || v.split(',').every((a) => isIP(a) !== 0),
        'must be a comma-separated list of IPv4 or IPv6 addresses (where apex domains point)',
      )
      .default(''),
    SVC_DOMAINS_PER_APP: z.coerce.number().int().min(0).max(1000).default(20),
    SVC_DOMAINS_PER_ACCOUNT: z.coerce.number().int().min(0).max(100_000).default(100),
    SVC_DOMAINS_RECHECK_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
  },
  read: (e) =>
    Object.freeze({
      /** Resolvers of the ownership and routing checks; undefined: the system's. */
      dnsServers: e.SVC_DOMAINS_DNS_SERVERS ? Object.freeze(e.SVC_DOMAINS_DNS_SERVERS.split(',')) : undefined,
      /** The addresses an apex domain's A/AAAA records name (none: apex domains are refused). */
      edgeAddresses: Object.freeze(e.SVC_DOMAINS_EDGE_ADDRESSES ? e.SVC_DOMAINS_EDGE_ADDRESSES.split(',') : []),
      perApp: e.SVC_DOMAINS_PER_APP,
      perAccount: e.SVC_DOMAINS_PER_ACCOUNT,
      /** How often a verified domain's records are checked again. */
      recheckMs: e.SVC_DOMAINS_RECHECK_SECONDS * 1000,
    }),
});

const deploys = part({
  env: {
    SVC_ARTIFACT_DIR: z.string().min(1).optional(),
    SVC_ARTIFACT_URL: httpUrl.optional(),
    SVC_ARTIFACT_KEY: z.string().min(32, 'must be at least 32 characters (a random secret)').optional(),
    SVC_ARTIFACT_KEY_FILE: z.string().min(1).optional(),
    // An S3-compatible object store keeps the artifacts instead of SVC_ARTIFACT_DIR, which is then a
    // local cache and the staging area (docs/decisions/0038-object-store.md).
    SVC_ARTIFACT_S3_ENDPOINT: httpUrl.optional(),
    SVC_ARTIFACT_S3_BUCKET: z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)')
      .optional(),
    SVC_ARTIFACT_S3_REGION: z.string().min(1).default('us-east-1'),
    SVC_ARTIFACT_S3_PREFIX: z
      .string()
      .regex(/^([A-Za-z0-9_-][A-Za-z0-9._-]*\/)*$/, 'must be empty or path segments each ending in / (none starting with a dot)')
      .default(''),
    SVC_ARTIFACT_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    SVC_ARTIFACT_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    SVC_ARTIFACT_S3_PATH_STYLE: z.enum(['true', 'false']).default('true'),
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
    SVC_ARTIFACT_BUILD_LOG_DAYS: z.coerce.number().min(1).max(3650).default(30),
    SVC_ARTIFACT_COLLECT_MINUTES: z.coerce
      .number()
      .min(1)
      .max(24 * 60)
      .default(15),
    SVC_RUNTIME_IMAGE: z.string().min(1).default('svc/runtime:latest'),
    SVC_ROLLOUT_DEADLINE_SECONDS: z.coerce.number().int().min(5).max(3600).default(120),
    SVC_VOLUME_STORAGE_CLASS: z.string().optional(),
  },
  uses: { SVC_STATE_DIR: stateDir, SVC_NODE_POD_SUBNET: nodes, SVC_API_MACHINE_PORT: api },
  read: (e, { exists }) => {
    const keyFile = e.SVC_ARTIFACT_KEY_FILE ?? path.join(stateDirOf(e), 'artifact-key');
    if (e.SVC_ARTIFACT_KEY_FILE !== undefined && !exists(keyFile))
      throw new ConfigError([`SVC_ARTIFACT_KEY_FILE: ${keyFile} does not exist`]);
    const artifactKey: Buffer | undefined =
      e.SVC_ARTIFACT_KEY !== undefined ? Buffer.from(e.SVC_ARTIFACT_KEY) : exists(keyFile) ? readFileSync(keyFile) : undefined;
    if (artifactKey !== undefined && artifactKey.length < 32)
      throw new ConfigError([`SVC_ARTIFACT_KEY_FILE: ${keyFile} holds fewer than 32 bytes`]);
    return Object.freeze({
      /**
       * Where the API keeps content-addressed artifacts (a shared volume when replicated); with an
       * object store, its local cache and the staging area of uploads.
       */
      artifactDir: path.resolve(e.SVC_ARTIFACT_DIR ?? path.join(stateDirOf(e), 'artifacts')),
      /** The S3-compatible store that keeps the artifacts, when one is configured. */
      objectStore: objectStoreOf(e),
      /**
       * The artifact endpoint's base URL as machines reach it; `<base>/sha256:<hex>` is one artifact.
       * Locally pods reach the host at the pod bridge's gateway (netns) or on loopback.
       */
      artifactBaseUrl: artifactBaseUrlOf(e),
      /**
       * The secret that mints (controllers) and checks (API) machines' artifact credentials
       * (lib/artifacts/credential.ts): SVC_ARTIFACT_KEY, else the file SVC_ARTIFACT_KEY_FILE, else
       * `<stateDir>/artifact-key` when it exists (hack/dev.sh makes it). Without one, no artifact is served.
       */
      artifactKey,
      /** Largest .tar.gz a deploy may upload. */
      uploadLimitBytes: e.SVC_DEPLOY_UPLOAD_LIMIT_BYTES,
      /**
       * What the artifact collector keeps besides what Apps, previews, builds in progress and backups
       * need (docs/decisions/0024-artifact-retention.md): each App's newest `rollbackDeploys` live
       * deploys; anything stored or reused within `graceMs`; an ended build's undeployed output for
       * `buildGraceMs`, and its log for `buildLogMs`. It runs every `collectEveryMs`, in one API
       * replica at a time.
       */
      artifactRetention: Object.freeze({
        rollbackDeploys: e.SVC_ARTIFACT_ROLLBACK_DEPLOYS,
        graceMs: Math.round(e.SVC_ARTIFACT_GRACE_MINUTES * 60_000),
        buildGraceMs: Math.round(e.SVC_ARTIFACT_BUILD_GRACE_HOURS * 3600_000),
        buildLogMs: e.SVC_ARTIFACT_BUILD_LOG_DAYS * 86_400_000,
        collectEveryMs: Math.round(e.SVC_ARTIFACT_COLLECT_MINUTES * 60_000),
      }),
      /** The image that serves static, HTML and Markdown apps (node-agent maps svc/runtime to runtime/). */
      runtimeImage: e.SVC_RUNTIME_IMAGE,
      /** A rollout whose new machines are not ready by then fails, and the previous deploy stays. */
      rolloutDeadlineSeconds: e.SVC_ROLLOUT_DEADLINE_SECONDS,
      /** The StorageClass of apps' volume claims (docs/decisions/0018-volumes.md); undefined: the cluster's default. */
      volumeStorageClass: e.SVC_VOLUME_STORAGE_CLASS || undefined,
    });
  },
});

const quotas = part({
  env: {
    SVC_ACCOUNT_MAX_APPS: z.coerce.number().int().min(1).max(1_000_000).default(100),
    SVC_APP_MAX_PREVIEWS: z.coerce.number().int().min(0).max(10_000).default(20),
    SVC_ACCOUNT_MAX_TOKENS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
    SVC_ACCOUNT_MAX_WEBHOOKS: z.coerce.number().int().min(0).max(10_000).default(25),
  },
  read: (e) =>
    Object.freeze({
      appsPerAccount: e.SVC_ACCOUNT_MAX_APPS,
      previewsPerApp: e.SVC_APP_MAX_PREVIEWS,
      tokensPerAccount: e.SVC_ACCOUNT_MAX_TOKENS,
      webhooksPerAccount: e.SVC_ACCOUNT_MAX_WEBHOOKS,
    }),
});

const sandboxes = part({
  env: {
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
  },
  read: (e) =>
    Object.freeze({
      /** The image every sandbox runs: the runtimes and the agent (hack/images.sh, svc/sandbox). */
      image: e.SVC_SANDBOX_IMAGE,
      /** Where sandbox pods run (the pool's and claimed ones), apart from every account's namespace. */
      namespace: e.SVC_SANDBOX_NAMESPACE,
      /** The RuntimeClass of sandbox pods; undefined for the cluster's default runtime. */
      runtimeClass: e.SVC_SANDBOX_RUNTIME_CLASS || undefined,
      /** Ready pods kept waiting for a claim. */
      poolSize: e.SVC_SANDBOX_POOL_SIZE,
      /** How long an ended sandbox's record stays readable. */
      retentionMs: Math.round(e.SVC_SANDBOX_RETENTION_HOURS * 3600_000),
      /** Per account: sandboxes open at once (429 beyond), and execs per minute. */
      maxOpenPerAccount: e.SVC_SANDBOX_MAX_OPEN,
      execPerMinute: e.SVC_SANDBOX_EXEC_PER_MINUTE,
      /** Most bytes of stdout and of stderr an exec answers (the rest is counted and dropped). */
      outputLimitBytes: e.SVC_SANDBOX_OUTPUT_LIMIT_BYTES,
    }),
});

const controllersMetrics = part({
  env: {
    SVC_CONTROLLERS_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    SVC_CONTROLLERS_METRICS_PORT: port.default(8082),
  },
  read: (e) => Object.freeze({ host: e.SVC_CONTROLLERS_METRICS_HOST, port: e.SVC_CONTROLLERS_METRICS_PORT }),
});

const proxy = part({
  env: {
    SVC_PROXY_HOST: z.string().min(1).default('0.0.0.0'),
    SVC_PROXY_PORT: port.default(8081),
    SVC_PROXY_UPSTREAM_CONNECTIONS: z.coerce.number().int().min(1).max(10_000).default(256),
    SVC_PROXY_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
    SVC_PROXY_WORKERS: z.coerce.number().int().min(1, 'must be 1-64').max(64, 'must be 1-64').optional(),
    // HTTPS (docs/decisions/0028-https.md): unset, no TLS listener.
    SVC_PROXY_TLS_PORT: port.optional(),
    // The port clients reach the TLS listener on (HTTP redirects there): 443 behind a Service.
    SVC_PROXY_TLS_PUBLIC_PORT: port.default(443),
  },
  read: (e) =>
    Object.freeze({
      host: e.SVC_PROXY_HOST,
      port: e.SVC_PROXY_PORT,
      /** Keep-alive connections to one machine at most. */
      upstreamConnections: e.SVC_PROXY_UPSTREAM_CONNECTIONS,
      /** A machine that has not answered with headers by then gets the client a 504. */
      upstreamTimeoutMs: e.SVC_PROXY_UPSTREAM_TIMEOUT_MS,
      /** Processes sharing the port (SO_REUSEPORT); default: the CPUs this process may run on. */
      workers: e.SVC_PROXY_WORKERS ?? availableParallelism(),
      /** The HTTPS listener's port (SNI: certificates from Secrets, lib/certificates/contract.ts); undefined: none. */
      tlsPort: e.SVC_PROXY_TLS_PORT,
      /** The port in `https://` redirects and origins: what clients connect to. */
      tlsPublicPort: e.SVC_PROXY_TLS_PUBLIC_PORT,
    }),
});

/** External account binding: both or neither (each read, so readsOf lists both). */
function eabOf(kid: string | undefined, hmacKey: string | undefined) {
  return kid && hmacKey ? Object.freeze({ kid, hmacKey }) : undefined;
}

function dns01Of(e: {
  readonly SVC_DNS01_ZONE: string | undefined;
  readonly SVC_DNS01_SERVER: string | undefined;
  readonly SVC_DNS01_TSIG_KEY_NAME: string | undefined;
  readonly SVC_DNS01_TSIG_ALGORITHM: 'hmac-sha256' | 'hmac-sha512' | 'hmac-sha1';
  readonly SVC_DNS01_TSIG_SECRET: string | undefined;
}) {
  // Each read whether or not a zone is set, so readsOf lists them all (`requires` sees to the rest).
  const { SVC_DNS01_ZONE: zone, SVC_DNS01_SERVER: server, SVC_DNS01_TSIG_KEY_NAME: name, SVC_DNS01_TSIG_SECRET: secret } = e;
  const algorithm = e.SVC_DNS01_TSIG_ALGORITHM;
  if (!zone || !server || !name || !secret) return undefined;
  const at = server.lastIndexOf(':');
  return Object.freeze({
    zone,
    server: Object.freeze({ host: server.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(server.slice(at + 1)) }),
    key: Object.freeze({ name, algorithm, secret }),
  });
}

/**
 * SVC_CERT_MANAGER_ISSUER as an issuerRef (`certManager`, absent unless the issuer is cert-manager);
 * required with SVC_CERTIFICATES_ISSUER=cert-manager.
 */
function certManagerOf(
  issuer: 'acme' | 'cert-manager' | 'none',
  ref: string | undefined,
): { certManager?: Readonly<{ issuerRef: Readonly<{ kind: string; name: string; group: string }> }> } {
  if (issuer !== 'cert-manager') return {};
  if (!ref) throw new ConfigError(['SVC_CERT_MANAGER_ISSUER: required when SVC_CERTIFICATES_ISSUER is cert-manager']);
  const slash = ref.indexOf('/');
  const kindGroup = ref.slice(0, slash);
  const dot = kindGroup.indexOf('.');
  const kind = dot === -1 ? kindGroup : kindGroup.slice(0, dot);
  const group = dot === -1 ? 'cert-manager.io' : kindGroup.slice(dot + 1);
  // cert-manager's own group has these two kinds only: anything else would be a Certificate no
  // issuer ever picks up, found out only when the first domain waits for ever.
  if (group === 'cert-manager.io' && kind !== 'Issuer' && kind !== 'ClusterIssuer')
    throw new ConfigError([`SVC_CERT_MANAGER_ISSUER: cert-manager.io has the kinds Issuer and ClusterIssuer (got ${JSON.stringify(ref)})`]);
  return { certManager: Object.freeze({ issuerRef: Object.freeze({ kind, name: ref.slice(slash + 1), group }) }) };
}

/** `SVC_CERTIFICATES_PLATFORM_ISSUER=dns01` and what it needs, checked together: a half-set one would never issue, silently. */
function platformDns01Of(e: {
  readonly SVC_CERTIFICATES_PLATFORM_ISSUER: 'provided' | 'dns01';
  readonly SVC_CERTIFICATES_PLATFORM_SECRET: string | undefined;
  readonly SVC_CERTIFICATES_ISSUER: 'acme' | 'cert-manager' | 'none';
  readonly SVC_ACME_DIRECTORY_URL: string | undefined;
  readonly SVC_DNS01_ZONE: string | undefined;
  readonly SVC_APPS_DOMAIN: string;
}) {
  const { SVC_CERTIFICATES_PLATFORM_ISSUER: issuer, SVC_CERTIFICATES_PLATFORM_SECRET: secret, SVC_APPS_DOMAIN: appsDomain } = e;
  if (issuer !== 'dns01') return undefined;
  const problems = [
    ...(secret ? [] : ['SVC_CERTIFICATES_PLATFORM_SECRET: must name the Secret the certificate is kept in']),
    ...(e.SVC_CERTIFICATES_ISSUER === 'acme' && e.SVC_ACME_DIRECTORY_URL
      ? []
      : ['SVC_CERTIFICATES_ISSUER: must be acme, with SVC_ACME_DIRECTORY_URL']),
    ...(e.SVC_DNS01_ZONE ? [] : ['SVC_DNS01_ZONE: must be set (with SVC_DNS01_SERVER and the TSIG key)']),
  ];
  if (problems.length) throw new ConfigError(problems.map((p) => `SVC_CERTIFICATES_PLATFORM_ISSUER=dns01 needs ${p}`));
  return Object.freeze({ domain: `*.${appsDomain}` });
}

const certificates = part({
  env: {
    // Where certificate Secrets and HTTP-01 challenge ConfigMaps live (the chart's release namespace).
    SVC_CERTIFICATES_NAMESPACE: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
      .default('svc-certificates'),
    // A `kubernetes.io/tls` Secret of that namespace a platform team provides for `*.<apps domain>`.
    SVC_CERTIFICATES_PLATFORM_SECRET: z
      .string()
      .regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, 'must be a Secret name')
      .optional(),
    // How `*.<apps domain>` gets its certificate: the Secret above as a platform team provides it, or
    // ordered into that Secret by the built-in ACME client over DNS-01 (needs the ACME issuer and
    // SVC_DNS01_*; `_acme-challenge.<apps domain>` in the DNS-01 zone or delegated to it by a CNAME).
    SVC_CERTIFICATES_PLATFORM_ISSUER: z.enum(['provided', 'dns01']).default('provided'),
    // Who issues custom domains' certificates: the built-in ACME client, cert-manager, or nobody.
    SVC_CERTIFICATES_ISSUER: z.enum(['acme', 'cert-manager', 'none']).default('none'),
    // With cert-manager: the issuer its Certificates name, `<Kind>[.<group>]/<name>` as kubectl spells
    // it (ClusterIssuer/letsencrypt; an Issuer is the certificates namespace's; the group defaults to
    // cert-manager.io, an external issuer names its own: AWSPCAClusterIssuer.awspca.cert-manager.io/pca).
    SVC_CERT_MANAGER_ISSUER: z
      .string()
      .regex(
        /^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/,
        'must be <Kind>[.<group>]/<name>, e.g. ClusterIssuer/letsencrypt',
      )
      .optional(),
    SVC_ACME_DIRECTORY_URL: z.string().url('must be the ACME directory URL').optional(),
    SVC_ACME_CONTACT: z
      .string()
      .regex(/^mailto:[^\s,]+$/, 'must be mailto:<address>')
      .optional(),
    SVC_ACME_EAB_KID: z.string().min(1).optional(),
    SVC_ACME_EAB_HMAC_KEY: z.string().min(1).optional(),
    // PEM certificates to trust for the directory's HTTPS besides the system's (Pebble's own CA locally).
    SVC_ACME_CA_FILE: z.string().min(1).optional(),
    // The ACME account key's Secret, `[<namespace>/]<name>` (default namespace: the certificates
    // one). The chart keeps it in the release namespace, out of ingress-auth's reach.
    SVC_ACME_ACCOUNT_SECRET: z
      .string()
      .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, 'must be [<namespace>/]<Secret name>')
      .default('svc-acme-account'),
    // ingress-auth's address as the issuer reaches it: a challenge is answered to the CA only once
    // ingress-auth serves it there (its informer may lag the ConfigMap by a moment).
    SVC_ACME_HTTP01_CHECK_URL: z.string().url("must be ingress-auth's http:// URL").optional(),
    // The CA's limits (Let's Encrypt's by default): the issuer never exceeds them.
    SVC_ACME_CERTS_PER_DOMAIN_WEEK: z.coerce.number().int().min(1).max(100_000).default(50),
    SVC_ACME_FAILED_VALIDATIONS_PER_HOUR: z.coerce.number().int().min(1).max(1000).default(5),
    SVC_ACME_ORDERS_PER_3H: z.coerce.number().int().min(1).max(1_000_000).default(300),
    // DNS-01, for wildcard domains (docs/decisions/0028-https.md): the zone the platform owns and
    // updates by RFC 2136 with TSIG; a tenant delegates `_acme-challenge.<base>` to a name in it by a
    // CNAME. The server is the zone's primary, `host:port`.
    SVC_DNS01_ZONE: z
      .string()
      .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z][-a-z0-9]*[a-z0-9]$/, 'must be a DNS zone name (lowercase, no trailing dot)')
      .optional(),
    SVC_DNS01_SERVER: z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port ([address]:port for IPv6)')
      .refine((v) => port.safeParse(v.slice(v.lastIndexOf(':') + 1)).success, 'must name a port 1-65535')
      .optional(),
    SVC_DNS01_TSIG_KEY_NAME: z
      .string()
      .regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/i, 'must be a TSIG key name')
      .optional(),
    SVC_DNS01_TSIG_ALGORITHM: z.enum(['hmac-sha256', 'hmac-sha512', 'hmac-sha1']).default('hmac-sha256'),
    // base64, as `tsig-keygen` prints it.
    SVC_DNS01_TSIG_SECRET: z
      .string()
      .regex(/^[A-Za-z0-9+/]{16,}={0,2}$/, 'must be the base64 TSIG secret')
      .optional(),
  },
  uses: { SVC_APPS_DOMAIN: appsDomain },
  requires: {
    SVC_DNS01_ZONE: ['SVC_DNS01_SERVER', 'SVC_DNS01_TSIG_KEY_NAME', 'SVC_DNS01_TSIG_SECRET'],
  },
  read: (e) =>
    Object.freeze({
      namespace: e.SVC_CERTIFICATES_NAMESPACE,
      /** The certificate of `*.<apps domain>` (a Secret name in `namespace`), if any: provided, or kept by the ACME issuer. */
      platformSecret: e.SVC_CERTIFICATES_PLATFORM_SECRET,
      /** Set: the ACME issuer orders `*.<apps domain>` by DNS-01 into `platformSecret`. */
      platformDns01: platformDns01Of(e),
      issuer: e.SVC_CERTIFICATES_ISSUER,
      /** `certManager.issuerRef`: the issuer cert-manager Certificates name (with `issuer: cert-manager` only). */
      ...certManagerOf(e.SVC_CERTIFICATES_ISSUER, e.SVC_CERT_MANAGER_ISSUER),
      acme: Object.freeze({
        directoryUrl: e.SVC_ACME_DIRECTORY_URL,
        contact: e.SVC_ACME_CONTACT,
        eab: eabOf(e.SVC_ACME_EAB_KID, e.SVC_ACME_EAB_HMAC_KEY),
        caFile: e.SVC_ACME_CA_FILE,
        accountSecret: Object.freeze(
          e.SVC_ACME_ACCOUNT_SECRET.includes('/')
            ? { namespace: e.SVC_ACME_ACCOUNT_SECRET.split('/')[0]!, name: e.SVC_ACME_ACCOUNT_SECRET.split('/')[1]! }
            : { namespace: e.SVC_CERTIFICATES_NAMESPACE, name: e.SVC_ACME_ACCOUNT_SECRET },
        ),
        http01CheckUrl: e.SVC_ACME_HTTP01_CHECK_URL,
        limits: Object.freeze({
          certificatesPerDomainWeek: e.SVC_ACME_CERTS_PER_DOMAIN_WEEK,
          failedValidationsPerHour: e.SVC_ACME_FAILED_VALIDATIONS_PER_HOUR,
          ordersPer3h: e.SVC_ACME_ORDERS_PER_3H,
        }),
        /** DNS-01 for wildcards, or undefined: they cannot get a certificate. */
        dns01: dns01Of(e),
      }),
    }),
});

const assertion = part({
  env: {
    SVC_ASSERTION_ISSUER: httpUrl.optional(),
    SVC_ASSERTION_JWKS_URL: httpUrl.optional(),
    SVC_ASSERTION_LIFETIME_SECONDS: z.coerce
      .number()
      .int()
      .min(30, 'must be 30-900 seconds')
      .max(900, 'must be 30-900 seconds')
      .default(300),
    SVC_ASSERTION_ROTATION_HOURS: z.coerce
      .number()
      .int()
      .min(1, 'must be 1-8760 hours')
      .max(8760, 'must be 1-8760 hours')
      .default(7 * 24),
  },
  uses: {
    SVC_APPS_DOMAIN: appsDomain,
    SVC_APPS_URL_SUFFIX: appsUrlSuffix,
    SVC_ARTIFACT_URL: deploys,
    SVC_NODE_POD_SUBNET: nodes,
    SVC_API_MACHINE_PORT: api,
  },
  read: (e) =>
    Object.freeze({
      /** `iss` of every assertion. Default: http://<appsDomain><appsUrlSuffix>/_svc/auth. */
      issuer: (e.SVC_ASSERTION_ISSUER ?? `http://${e.SVC_APPS_DOMAIN}${e.SVC_APPS_URL_SUFFIX}/_svc/auth`).replace(/\/+$/, ''),
      /**
       * Where machines fetch the assertion keys to verify identity headers (the runtime does; container
       * services may): the API serves them at /_svc/auth/jwks.json. Default: that path on the API as
       * machines reach it (the origin of the artifact URL).
       */
      jwksUrl: e.SVC_ASSERTION_JWKS_URL ?? `${new URL(artifactBaseUrlOf(e)).origin}/_svc/auth/jwks.json`,
      /** `exp - iat` of an assertion, and how long a replaced key stays in the JWKS after it stops signing. */
      lifetimeSeconds: e.SVC_ASSERTION_LIFETIME_SECONDS,
      /** How long one key signs before a new one takes over. */
      rotationMs: e.SVC_ASSERTION_ROTATION_HOURS * 3600_000,
    }),
});

const auth = part({
  env: {
    SVC_AUTH_HOST: z
      .string()
      .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a host name')
      .optional(),
    SVC_AUTH_SECURE_COOKIES: bool.default(false),
    SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY: z.coerce.number().int().min(1).max(1000).default(5),
    SVC_AUTH_EMAIL_PER_SOURCE_HOURLY: z.coerce.number().int().min(1).max(100_000).default(30),
    SVC_IDP_ISSUER: httpUrl.optional(),
    SVC_IDP_CLIENT_ID: z.string().min(1).optional(),
    SVC_IDP_CLIENT_SECRET: z.string().min(1).optional(),
    SVC_CODEHOST_URL: httpUrl.default('https://github.com'),
    SVC_CODEHOST_API_URL: httpUrl.default('https://api.github.com'),
    SVC_CODEHOST_CLIENT_ID: z.string().min(1).optional(),
    SVC_CODEHOST_CLIENT_SECRET: z.string().min(1).optional(),
  },
  uses: { SVC_APPS_DOMAIN: appsDomain },
  requires: {
    SVC_IDP_ISSUER: ['SVC_IDP_CLIENT_ID', 'SVC_IDP_CLIENT_SECRET'],
    SVC_CODEHOST_CLIENT_ID: ['SVC_CODEHOST_CLIENT_SECRET'],
  },
  read: (e) =>
    Object.freeze({
      /**
       * The platform's own sign-in host, where identity providers send their callbacks (one redirect
       * URI to register, not one per app). Default: login.<appsDomain>; the API refuses it as an app name.
       */
      host: e.SVC_AUTH_HOST ?? `login.${e.SVC_APPS_DOMAIN}`,
      /** Cookies get `Secure` and the `__Host-` prefix: set when app hostnames are served over https. */
      secureCookies: e.SVC_AUTH_SECURE_COOKIES,
      /** Sign-in links the login page sends: per address and per source address, each per hour. */
      emailRate: Object.freeze({
        perAddressHourly: e.SVC_AUTH_EMAIL_PER_ADDRESS_HOURLY,
        perSourceHourly: e.SVC_AUTH_EMAIL_PER_SOURCE_HOURLY,
      }),
      /** OpenID Connect provider of `idp` policies; undefined when not configured. */
      idp: e.SVC_IDP_ISSUER
        ? Object.freeze({ issuer: e.SVC_IDP_ISSUER, clientId: e.SVC_IDP_CLIENT_ID!, clientSecret: e.SVC_IDP_CLIENT_SECRET! })
        : undefined,
      /** OAuth2 code-hosting provider of `codehost` policies (GitHub's API shape); undefined when not configured. */
      codehost: e.SVC_CODEHOST_CLIENT_ID
        ? Object.freeze({
            url: e.SVC_CODEHOST_URL.replace(/\/+$/, ''),
            apiUrl: e.SVC_CODEHOST_API_URL.replace(/\/+$/, ''),
            clientId: e.SVC_CODEHOST_CLIENT_ID,
            clientSecret: e.SVC_CODEHOST_CLIENT_SECRET!,
          })
        : undefined,
    }),
});

const site = part({
  uses: { SVC_APPS_DOMAIN: appsDomain, SVC_APPS_URL_SUFFIX: appsUrlSuffix, SVC_AUTH_SECURE_COOKIES: auth },
  // Secure cookies need https, so they are what says app hostnames are served over it.
  read: (e): AppsSite =>
    Object.freeze({ appsDomain: e.SVC_APPS_DOMAIN, appsUrlSuffix: e.SVC_APPS_URL_SUFFIX, secure: e.SVC_AUTH_SECURE_COOKIES }),
});

const mail = part({
  env: {
    SVC_SMTP_URL: z
      .url()
      .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
      .optional(),
    SVC_MAIL_FROM: z.string().min(3).optional(),
  },
  uses: { SVC_APPS_DOMAIN: appsDomain },
  read: (e) => Object.freeze({ smtpUrl: e.SVC_SMTP_URL, from: e.SVC_MAIL_FROM ?? `Sign-in <no-reply@${e.SVC_APPS_DOMAIN}>` }),
});

// Account domains through a registrar (docs/decisions/0035-registrar.md): none, or name.com's Core
// API (production https://api.name.com, sandbox https://api.dev.name.com, or the local double).
const registrar = part({
  env: {
    SVC_REGISTRAR: z.enum(['none', 'namecom']).default('none'),
    SVC_REGISTRAR_URL: httpUrl.default('https://api.name.com'),
    SVC_REGISTRAR_USERNAME: z.string().min(1).optional(),
    SVC_REGISTRAR_TOKEN: z.string().min(1).optional(),
    SVC_REGISTRAR_TOKEN_FILE: z.string().min(1).optional(),
    SVC_REGISTRAR_TLDS: z
      .string()
      .regex(
        /^[a-z0-9-]+(\.[a-z0-9-]+)*(,[a-z0-9-]+(\.[a-z0-9-]+)*)*$/,
        'must be a comma-separated list of TLDs without dots in front (com,dev)',
      )
      .default('com,net,org,dev,app,io'),
    SVC_REGISTRAR_SEARCH_CACHE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
    SVC_REGISTRAR_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30),
    SVC_REGISTRAR_RENEW_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
    SVC_REGISTRAR_RENEW_RETRY_SECONDS: z.coerce.number().int().min(1).max(86400).default(3600),
    SVC_REGISTRAR_RENEWER_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86400).default(600),
  },
  read: (e) => {
    if (e.SVC_REGISTRAR === 'none') return undefined;
    const token = e.SVC_REGISTRAR_TOKEN;
    const tokenFile = e.SVC_REGISTRAR_TOKEN_FILE;
    const problems = [
      ...(e.SVC_REGISTRAR_USERNAME ? [] : ['SVC_REGISTRAR_USERNAME: required when SVC_REGISTRAR is namecom']),
      ...(e.SVC_REGISTRAR_TOKEN || e.SVC_REGISTRAR_TOKEN_FILE
        ? []
        : ['SVC_REGISTRAR_TOKEN or SVC_REGISTRAR_TOKEN_FILE: required when SVC_REGISTRAR is namecom']),
    ];
    if (problems.length) throw new ConfigError(problems);
    return Object.freeze({
      kind: e.SVC_REGISTRAR,
      url: e.SVC_REGISTRAR_URL,
      username: e.SVC_REGISTRAR_USERNAME!,
      /** The API token itself, or the file it is read from at start (a mounted Secret). */
      token: token ? { value: token } : { file: path.resolve(tokenFile!) },
      tlds: Object.freeze(e.SVC_REGISTRAR_TLDS.split(',')),
      searchCacheMs: e.SVC_REGISTRAR_SEARCH_CACHE_SECONDS * 1000,
      /** A call's limit; past it a purchase's outcome is unknown and settled by looking the name up. */
      timeoutMs: e.SVC_REGISTRAR_TIMEOUT_SECONDS * 1000,
      renewer: Object.freeze({
        /** Auto-renew names are renewed this many days before they expire (and names not renewing are told of then). */
        renewDays: e.SVC_REGISTRAR_RENEW_DAYS,
        /** The wait after a failed renewal; it doubles with each failure, to a day at most. */
        retryMs: e.SVC_REGISTRAR_RENEW_RETRY_SECONDS * 1000,
        /** Between two looks at what is due. */
        intervalMs: e.SVC_REGISTRAR_RENEWER_INTERVAL_SECONDS * 1000,
      }),
    });
  },
});

/** Every part, in Config's order (exported for the tests). */
export const parts = {
  /** Where local state lives: kubeconfig, tokens, data of the local platform. */
  stateDir,
  logLevel,
  databaseUrl,
  /**
   * Path of the kubeconfig to use. Defaults to `<stateDir>/kubeconfig` when that is the local
   * platform's; undefined means in-cluster credentials (or the client's default loading rules).
   */
  kubeconfig,
  api,
  /** App hostnames are <app>.<appsDomain>; URLs add appsUrlSuffix (the proxy's port locally). */
  appsDomain,
  appsUrlSuffix,
  /** The same, with whether app hostnames are served over https: what appUrl() (lib/contract.ts) takes. */
  site,
  /** How long a deleted app's hostname stays held for its account (lib/hostnames.ts). */
  hostnameHoldMs,
  /** How long the event log keeps an event; a cursor before what is kept is answered 410 (lib/events.ts). */
  eventsRetentionMs,
  /** Databases' servers (controllers/database/): their image, volume class and default size. */
  databases,
  /** Builds (controllers/build/, builder/, api/builds/): docs/api/builds.md. */
  builds,
  /**
   * Which registries tenants' images may come from (lib/images/registry-policy.ts): the allow-list
   * (undefined: any public registry) and the platform's own registry, always allowed.
   */
  images,
  /**
   * The platform registry's token service (registry-auth/): where it listens (the registry's realm,
   * on the host), the key it signs with and that key's certificate (the registry's rootcertbundle),
   * the clients file (the operator's and the nodes' password hashes), and its tokens' names and life.
   */
  registryAuth,
  /**
   * Where the platform is as machines see it, for each App's NetworkPolicy: the addresses
   * ingress-auth and probes come from and the machine listener is on, and that listener's ports.
   */
  machineNetwork,
  /**
   * Tenant pods (machines, builds, sandboxes, database servers) each in a user namespace of their
   * own (hostUsers: false): their uid 0 and 1000 are unprivileged high IDs on the node
   * (docs/decisions/0022-runtime.md).
   * Off only for a cluster whose runtime cannot (containerd before 2.0, runc before 1.2).
   */
  userNamespaces,
  /** Allow webhook URLs on loopback and private networks (tests and local development only). */
  webhookAllowPrivate,
  /** The DNS servers webhook hosts are resolved with (and checked against the URL guard); default the system's. */
  webhookDnsServers,
  /** Custom domains: resolvers, edge addresses, limits, recheck interval (docs/decisions/0027-app-domains.md). */
  domains,
  /** The registrar account domains are bought through; undefined: none (docs/decisions/0035-registrar.md). */
  registrar,
  deploys,
  /**
   * Per-account counts (403 quota_exceeded beyond), each checked and taken under the account's
   * lock (api/quotas.ts): apps (previews included), previews per app, live tokens, webhooks.
   */
  quotas,
  /** Sandboxes and eval (docs/api/sandboxes.md, docs/decisions/0016-sandboxes.md). */
  sandboxes,
  /** The controllers' /metrics and /healthz listener. */
  controllersMetrics,
  /** ingress-auth: the proxy on every app hostname. */
  proxy,
  /** HTTPS certificates: where they are kept, who issues them, the ACME account and the CA's limits (decision 0028). */
  certificates,
  /** The identity assertions (X-Svc-Auth-Assertion) ingress-auth signs for apps. */
  assertion,
  /** Sign-in on app hostnames (ingress-auth) and its providers. */
  auth,
  /** Outgoing mail (sign-in links): SMTP through nodemailer; undefined smtpUrl keeps mail queued. */
  mail,
  /** The local platform's nodes (hack/nodes.sh), for the parts that run on their host. */
  nodes,
};

type Parts = typeof parts;
type PartName = keyof Parts;

// Written `keyof Parts` (not PartName) so that hovering a property shows the part's doc comment.
export type Config = { readonly [K in keyof Parts]: ReturnType<Parts[K]['read']> };

type EnvName = { [K in PartName]: keyof Parts[K]['env'] & string }[PartName];

/** Every variable, the merge of the parts' `env` (exported for the tests). */
export const envSchema = z.object(Object.assign({}, ...Object.values(parts).map((p) => p.env)) as Record<EnvName, z.ZodType>);

/**
 * The variables each part of the configuration is made from. A process reads only the parts it
 * names (`components` below), so only their variables are validated: a bad value in a variable
 * another process reads does not stop this one, and cannot change it.
 */
export const readsOf = Object.fromEntries(
  Object.entries(parts).map(([name, p]) => [name, Object.freeze([...Object.keys(p.env), ...Object.keys(p.uses)])]),
) as { readonly [K in PartName]: readonly EnvName[] };

/** The parts named, from the variables they read (validated together, each problem reported). */
function loadParts<N extends PartName>(
  names: readonly N[],
  env: Record<string, string | undefined>,
  opts: { exists?: (file: string) => boolean },
): Pick<Config, N> {
  const reads = new Set<string>(names.flatMap((name) => readsOf[name]));
  const shape = Object.fromEntries(Object.entries(envSchema.shape).filter(([name]) => reads.has(name)));
  const parsed = z.object(shape).safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = issue.path.join('.');
        const got = env[name];
        return `${name}: ${issue.message}${got === undefined ? '' : ` (got ${JSON.stringify(got)})`}`;
      }),
    );
  }
  const e = parsed.data as Record<string, unknown>;
  const missing = names.flatMap((name) =>
    Object.entries(parts[name].requires as Record<string, readonly string[]>).flatMap(([set, needs]) =>
      e[set] === undefined ? [] : needs.filter((n) => !env[n]).map((n) => `${n}: required when ${set} is set`),
    ),
  );
  if (missing.length) throw new ConfigError(missing);
  const ctx: Context = { exists: opts.exists ?? existsSync };
  const read = (name: PartName) => {
    const own = Object.fromEntries(readsOf[name].map((v) => [v, e[v]]));
    return (parts[name].read as (e: unknown, ctx: Context) => unknown)(own, ctx);
  };
  return Object.freeze(Object.fromEntries(names.map((name) => [name, read(name)]))) as Pick<Config, N>;
}

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  opts: { exists?: (file: string) => boolean } = {},
): Config {
  return loadParts(Object.keys(parts) as PartName[], env, opts);
}

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
    'domains',
    'registrar',
    'certificates',
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
    'userNamespaces',
    'controllersMetrics',
  ],
  'ingress-auth': [
    'logLevel',
    'databaseUrl',
    'kubeconfig',
    'appsDomain',
    'appsUrlSuffix',
    'site',
    'proxy',
    'certificates',
    'assertion',
    'auth',
    'mail',
  ],
  'policy-agent': ['logLevel', 'kubeconfig'],
  // Copies a directory of artifacts into the object store (api/migrate-artifacts.ts).
  'artifacts-migration': ['stateDir', 'logLevel', 'deploys'],
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
  return loadParts(components[component], env, opts);
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
