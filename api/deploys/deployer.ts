// Turns deploy input (inline files, an uploaded .tar.gz, an image, a compose file) into a stored
// artifact and the App spec fields that serve it, then records the deploy and writes the App. All
// validation happens before anything is stored or written, so bad input leaves nothing behind.
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { listTarball, packTree, readTarballFiles, TreeError } from '../../lib/artifacts/tarball.js';
import { UploadTooLarge, type ArtifactStore, type StagedUpload } from '../../lib/artifacts/store.js';
import { newDeployId, type Deploy, type DeployOrigin, type DeploySpec, type DeployStore, type ServiceSpec } from '../../lib/deploys.js';
import { deployOwnedFields, type DeployOwnedField } from '../../lib/contract.js';
import type { Logger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import type { AppRecord } from '../repositories/app-record.js';
import { planHandlerRoutes } from '../../lib/handlers/routes.js';
import { BindingError, compileBindings, type DataModel } from '../../lib/html-data/compile.js';
import {
  combine,
  isHtmlPage,
  isMarkdownPage,
  PolicyError,
  treeDeclarations,
  type AuthPolicy,
  type Declaration,
} from '../../lib/policy/index.js';
import { DomainError } from '../../lib/errors.js';
import { ApiError, invalid } from '../errors.js';
import type { AppRepository } from '../repositories/apps.js';
import type { Env, EnvRepository } from '../repositories/env.js';
import type { VolumeSpec } from '../../lib/volumes.js';
import { refusedImage, tenantImages, type RegistryPolicyConfig } from '../../lib/images/registry-policy.js';
import type { AccountLock } from '../quotas.js';
import { declaredClaims, type AccountStorage } from '../storage/account-storage.js';
import { parseCompose, type Compose, type ComposeService } from './compose.js';
import { detectKind, isHtml } from './detect.js';

const imageRef = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$/, 'must be a container image reference');

const fileContent = z.union([z.string(), z.strictObject({ base64: z.base64() })]);

export const deployFields = z.strictObject({
  files: z.record(z.string().min(1).max(1024), fileContent).optional(),
  image: imageRef.optional(),
  compose: z
    .string()
    .min(1)
    .max(256 * 1024)
    .optional(),
  port: z.number().int().min(1).max(65535).optional(),
  command: z.array(z.string().max(4096)).max(64).optional(),
  args: z.array(z.string().max(4096)).max(256).optional(),
});

export const deployBody = deployFields
  .refine((b) => [b.files, b.image, b.compose].some((x) => x !== undefined), 'send files, image, compose, or a .tar.gz body')
  .refine((b) => !(b.image && (b.files || b.compose)), 'image deploys take no files or compose')
  .refine(
    (b) => b.image || (b.port === undefined && b.command === undefined && b.args === undefined),
    'port, command and args go with image',
  );
export type DeployBody = z.infer<typeof deployBody>;

export const tarballTypes = ['application/gzip', 'application/x-gzip', 'application/x-tar+gzip', 'application/x-compressed-tar'];

/** What a deploy will run, validated and with its artifact stored. */
export interface Prepared {
  spec: DeploySpec;
  origin: DeployOrigin;
  summary: Record<string, unknown>;
  /** Settings the deploy carries beyond the spec fields a deploy owns (compose x-svc). */
  machines?: number;
  /** A compose service's volumes, the whole list (an empty one detaches the app's volumes). */
  volumes?: VolumeSpec[];
}

/**
 * Stores a validated upload as the account's: its bytes counted against the account's storage and
 * refused (quota_exceeded, discarded) when they do not fit (api/storage/account-storage.ts).
 */
export type Keep = (staged: StagedUpload) => Promise<void>;

/**
 * Pages are read whole for policy declarations, which must not be missed (a missed one is a page
 * served unprotected): together up to this size each, a larger page on its own, and a page larger
 * than `policyMaxBytes` is refused rather than deployed unchecked.
 */
const policyBatchBytes = 8 * 1024 * 1024;
const policyMaxBytes = 64 * 1024 * 1024;

/** What `fn` makes, or the deploy's 400 when it throws `problem`: `<what>: <its message>` (file and line or field). */
function orInvalid<T>(fn: () => T, problem: new (...args: never[]) => Error, what: string): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof problem) throw invalid(`${what}: ${err.message}`);
    throw err;
  }
}

/** A policy problem is the deploy's 400, its message naming the file and the field. */
const policyOrInvalid = <T>(fn: () => T): T => orInvalid(fn, PolicyError, 'authentication policy');

/** An HTML app's data bindings, compiled (docs/api/html-data.md); a bad one is the deploy's 400 naming file, line and attribute. */
function bindingsOrInvalid(kind: string, pages: ReadonlyMap<string, Buffer>): DataModel | undefined {
  if (kind !== 'html') return undefined;
  const html = new Map([...pages].filter(([p]) => isHtmlPage(p)).map(([p, body]) => [p, body.toString('utf8')] as const));
  return orInvalid(() => compileBindings(html), BindingError, 'html data binding');
}

export class Deployer {
  constructor(
    private readonly artifacts: ArtifactStore,
    private readonly deploys: DeployStore,
    private readonly apps: AppRepository,
    private readonly log: Logger,
    /** The artifact endpoint's base URL as machines reach it (config.deploys.artifactBaseUrl). */
    private readonly artifactBaseUrl: string,
    /** Which registries images may come from (config.images): issue 30 finding 6. */
    private readonly images: RegistryPolicyConfig,
    /**
     * The account's lock and storage: a deploy's new volume claims are counted against the storage
     * limit and the App written under the lock (issue 30 finding 4). Without it, nothing is counted.
     */
    private readonly quota?: { lock: Pick<AccountLock, 'hold'>; storage: Pick<AccountStorage, 'newVolumeBytes' | 'assertFits'> },
  ) {}

  /** 400 naming the rule when an image of `spec` comes from a registry tenants may not use. */
  private checkImages(spec: Pick<DeploySpec, 'kind' | 'image' | 'services'>): void {
    const problem = refusedImage(tenantImages(spec), this.images);
    if (problem) throw invalid(problem);
  }

  /** Validates a tree in a staged tar.gz, stores it, and says what it is. Discards it when invalid. */
  private async prepareTree(staged: StagedUpload, origin: DeployOrigin, keep: Keep, composePolicy: Declaration[] = []): Promise<Prepared> {
    try {
      const entries = await listTarball(staged.file).catch((err: unknown) => {
        if (err instanceof TreeError) throw invalid(`archive: ${err.message}`);
        throw err;
      });
      const isPage = (p: string) => isHtmlPage(p) || isMarkdownPage(p);
      const pages = await readTarballFiles(staged.file, isPage, policyBatchBytes);
      for (const big of entries.filter((e) => isPage(e.path) && e.size > policyBatchBytes)) {
        if (big.size > policyMaxBytes)
          throw invalid(
            `${big.path}: a page larger than ${policyMaxBytes / 1024 / 1024} MiB cannot be checked for authentication policy declarations`,
          );
        for (const [p, body] of await readTarballFiles(staged.file, (x) => x === big.path, policyMaxBytes)) pages.set(p, body);
      }
      // Every page, whatever its size: a binding far down a large page makes an HTML app as much as one
      // at the top (and must be compiled and checked, not served as a static file's text).
      const html = new Map([...pages].filter(([p]) => isHtml(p)));
      const detected = detectKind(
        entries.map((e) => e.path),
        html,
      );
      // Declarations in the compose file and in the pages make one policy for the whole app.
      const auth = policyOrInvalid(() =>
        combine([
          ...composePolicy,
          ...treeDeclarations(
            detected.kind,
            entries.map((e) => e.path),
            pages,
          ),
        ]),
      );
      const data = bindingsOrInvalid(detected.kind, pages);
      if (detected.kind === 'handlers') {
        // Refuse what the runtime could not run (other languages, clashing routes) rather than
        // deploy an app that answers 500.
        const { problems } = planHandlerRoutes(entries.map((e) => e.path));
        if (problems.length) throw invalid(`this handler tree (${detected.why}) cannot be served: ${problems.slice(0, 5).join('; ')}`);
      }
      await keep(staged);
      const bytes = entries.reduce((n, e) => n + e.size, 0);
      return {
        origin,
        spec: {
          kind: detected.kind,
          source: { digest: staged.digest, url: `${this.artifactBaseUrl}/${staged.digest}` },
          ...(auth ? { auth } : {}),
          ...(data ? { data } : {}),
        },
        summary: {
          files: entries.length,
          bytes,
          archive_bytes: staged.size,
          detected: detected.why,
          ...policySummary(auth),
          ...(data ? { data: { bindings: data.bindings.length, collections: Object.keys(data.collections) } } : {}),
        },
      };
    } catch (err) {
      await staged.discard();
      throw err;
    }
  }

  async prepareBody(body: DeployBody, keep: Keep): Promise<Prepared> {
    if (body.image) {
      this.checkImages({ kind: 'container', image: body.image });
      return {
        origin: 'image',
        spec: {
          kind: 'container',
          image: body.image,
          ...(body.port ? { port: body.port } : {}),
          ...(body.command ? { command: body.command } : {}),
          ...(body.args ? { args: body.args } : {}),
        },
        summary: { image: body.image },
      };
    }
    const sent = body.files
      ? new Map(
          Object.entries(body.files).map(([p, c]) => [
            p.replace(/^\.\//, ''),
            typeof c === 'string' ? c : Buffer.from(c.base64, 'base64').toString('utf8'),
          ]),
        )
      : undefined;
    const compose = body.compose !== undefined ? parseCompose(body.compose, sent ? (p) => sent.get(p) : undefined) : undefined;
    if (compose?.services.length) {
      // Files go with a compose file's services only as the env files they read.
      const extra = [...(sent?.keys() ?? [])].filter((p) => !compose.envFiles.includes(p));
      if (extra.length)
        throw invalid(
          `a compose file's services run their images: files sent with it are its env_file files only (${extra.slice(0, 3).join(', ')} ${extra.length > 1 ? 'are' : 'is'} not one)`,
        );
      const prepared = composePrepared(
        compose,
        policyOrInvalid(() => combine(compose.policy ?? [])),
      );
      this.checkImages(prepared.spec);
      return prepared;
    }
    if (!body.files) throw invalid('this compose file has no container service (only x-svc): send the files it configures with it');
    if (!Object.keys(body.files).length) throw invalid('the deploy has no files');
    const files = Object.fromEntries(
      Object.entries(body.files).map(([p, c]) => [p, typeof c === 'string' ? c : Buffer.from(c.base64, 'base64')]),
    );
    const packed = await packTree(files).catch((err: unknown) => {
      if (err instanceof TreeError) throw invalid(`files: ${err.message}`);
      throw err;
    });
    const prepared = await this.prepareTree(await this.artifacts.stageBytes(packed), compose ? 'compose' : 'files', keep, compose?.policy);
    return compose?.settings.machines !== undefined ? { ...prepared, machines: compose.settings.machines } : prepared;
  }

  /**
   * A tree already in the store (a build's output), validated and explained like an upload; never
   * discarded when refused (the store keeps what builds made). `keep` holds it for the account.
   */
  async prepareStored(digest: string, origin: DeployOrigin, summary: Record<string, unknown>, keep: Keep): Promise<Prepared> {
    const size = await this.artifacts.size(digest);
    if (size === undefined) throw new DomainError('not_found', `artifact ${digest} is not in the store`);
    const prepared = await this.prepareTree(
      { file: await this.artifacts.localFile(digest), digest, size, discard: async () => undefined },
      origin,
      keep,
    );
    return { ...prepared, summary: { ...prepared.summary, ...summary } };
  }

  async prepareUpload(stream: Readable, limitBytes: number, keep: Keep): Promise<Prepared> {
    const staged = await this.artifacts.stage(stream, limitBytes).catch((err: unknown) => {
      if (err instanceof UploadTooLarge) throw new ApiError('payload_too_large', `upload larger than ${limitBytes} bytes`);
      throw err;
    });
    return this.prepareTree(staged, 'tarball', keep);
  }

  /**
   * Records the deploy and points the App at it, under the account's lock: refused (403
   * quota_exceeded, nothing written) when the volume claims the App would declare after it, and the
   * account neither has nor declares yet, would bring its storage over the limit. The App is in the
   * cache the next count reads before the lock goes, so parallel deploys each adding volumes cannot
   * all pass. The App controller decides how it ends; the deploy recorder writes that down
   * (recorder.ts). Never call it holding the account's lock.
   */
  async apply(accountId: string, app: AppRecord, prepared: Prepared, opts: ApplyOptions = {}): Promise<Deploy> {
    // Every deploy's images once more before anything is written: rollbacks and builds come here
    // without passing prepareBody, and a deploy recorded before the rule must not run again.
    this.checkImages(prepared.spec);
    const quota = this.quota;
    // Only a deploy after which the App declares volumes can add to the account's storage; the others
    // skip the lock (one of a few platform-wide slots) and its wait for the cache.
    if (!quota || declaredClaims(app.name, specAfter(app.spec, prepared)).size === 0) return this.write(accountId, app, prepared, opts);
    return quota.lock.hold(accountId, async () => {
      // The App as it is now: a deploy that finished meanwhile may have changed its volumes.
      const fresh = (await this.apps.find(app.namespace, app.id)) ?? app;
      const more = quota.storage.newVolumeBytes(app.namespace, app.name, specAfter(fresh.spec, prepared));
      await quota.storage.assertFits(accountId, app.namespace, more, `the app's volumes need ${more} more bytes`);
      return this.write(accountId, fresh, prepared, opts);
    });
  }

  private async write(accountId: string, app: AppRecord, prepared: Prepared, opts: ApplyOptions): Promise<Deploy> {
    const name = app.name;
    const deploy = await this.deploys.create({
      accountId,
      app: { uid: app.id, name },
      spec: prepared.spec,
      origin: opts.origin ?? prepared.origin,
      summary: prepared.summary,
      ...(opts.originDeploy ? { originDeploy: opts.originDeploy } : {}),
      ...(opts.createdBy ? { createdBy: opts.createdBy } : {}),
    });
    try {
      await this.apps.patchSpec(app.namespace, name, {
        ...specPatch(prepared.spec),
        deployId: deploy.id,
        ...(prepared.machines !== undefined ? { machines: prepared.machines } : {}),
        ...(prepared.volumes !== undefined ? { volumes: prepared.volumes.length ? prepared.volumes : null } : {}),
      });
    } catch (err) {
      await this.deploys.finish(deploy.id, {
        status: 'failed',
        reason: err instanceof DomainError ? err.message : 'the app could not be updated',
      });
      throw err;
    }
    this.log.info({ app: name, deploy: deploy.id, kind: prepared.spec.kind, origin: deploy.origin }, 'Deploy started');
    return deploy;
  }
}

type ApplyOptions = { createdBy?: string; originDeploy?: string; origin?: DeployOrigin };

/** The App spec after `prepared` is applied to it, as far as volumes go (machines, volumes, services). */
export function specAfter(spec: App['spec'], prepared: Pick<Prepared, 'spec' | 'machines' | 'volumes'>): App['spec'] {
  return {
    ...spec,
    ...(prepared.machines !== undefined ? { machines: prepared.machines } : {}),
    ...(prepared.volumes !== undefined ? { volumes: prepared.volumes } : {}),
    services: prepared.spec.services,
  };
}

/**
 * Creates an App that starts serving `prepared` right away (forks, previews): the App names the
 * deploy from its first write, so its first machines are already the deploy's.
 */
export async function createServing(
  d: { deploys: DeployStore; apps: AppRepository; env: EnvRepository },
  accountId: string,
  namespace: string,
  metadata: Parameters<AppRepository['createWith']>[1],
  spec: App['spec'],
  prepared: Prepared | undefined,
  opts: { origin: DeployOrigin; originDeploy?: string; createdBy?: string; env?: Env },
): Promise<{ app: AppRecord; deploy?: Deploy }> {
  // The env copy exists before the App names it, so the App's first machines already have it.
  const secret = opts.env && Object.keys(opts.env).length ? await d.env.prepare(namespace, metadata.name, opts.env) : undefined;
  const id = prepared ? newDeployId() : undefined;
  const full: App['spec'] = {
    ...spec,
    ...(secret ? { envSecretName: secret.name } : {}),
    ...(prepared
      ? {
          ...prepared.spec,
          deployId: id,
          ...(prepared.machines !== undefined ? { machines: prepared.machines } : {}),
          ...(prepared.volumes?.length ? { volumes: prepared.volumes } : {}),
        }
      : {}),
  };
  const app = await d.apps.createWith(namespace, metadata, full).catch(async (err: unknown) => {
    await secret?.discard();
    throw err;
  });
  await secret?.adopt(app);
  if (!prepared) return { app };
  const deploy = await d.deploys.create({
    id: id!,
    accountId,
    app: { uid: app.id, name: app.name },
    spec: prepared.spec,
    origin: opts.origin,
    summary: prepared.summary,
    ...(opts.originDeploy ? { originDeploy: opts.originDeploy } : {}),
    ...(opts.createdBy ? { createdBy: opts.createdBy } : {}),
  });
  return { app, deploy };
}

/** A compose file with services as a deploy: the public service in the top-level fields, the others in services. */
function composePrepared(compose: Compose, auth: AuthPolicy | undefined): Prepared {
  const [pub, ...others] = compose.services as [ComposeService, ...ComposeService[]];
  const own = (s: ComposeService) => ({
    ...(s.command ? { command: s.command } : {}),
    ...(s.args ? { args: s.args } : {}),
    ...(s.env.length ? { env: s.env } : {}),
    ...(s.healthcheck ? { healthcheck: s.healthcheck } : {}),
    ...(s.dependsOn.length ? { dependsOn: s.dependsOn } : {}),
    ...(s.aliases.length ? { aliases: s.aliases } : {}),
    ...(s.workingDir ? { workingDir: s.workingDir } : {}),
  });
  const services: ServiceSpec[] = others.map((s) => ({
    name: s.name,
    image: s.image,
    ...own(s),
    ...(s.port !== undefined ? { port: s.port } : {}),
    ...(s.ports.length ? { ports: s.ports } : {}),
    ...(s.volumes.length ? { volumes: s.volumes } : {}),
    ...(s.machines !== undefined ? { machines: s.machines } : {}),
    ...(s.restart ? { restart: s.restart } : {}),
  }));
  return {
    origin: 'compose',
    spec: {
      kind: 'container',
      image: pub.image,
      ...(pub.port ? { port: pub.port } : {}),
      ...own(pub),
      // A one-service file keeps the shape of an image deploy; services name themselves once there are several.
      ...(services.length ? { service: pub.name, services, ...(pub.ports.length ? { ports: pub.ports } : {}) } : {}),
      ...(auth ? { auth } : {}),
    },
    summary: {
      service: pub.name,
      image: pub.image,
      ...(services.length ? { services: [pub.name, ...services.map((s) => s.name)] } : {}),
      ...policySummary(auth),
    },
    ...(compose.settings.machines !== undefined ? { machines: compose.settings.machines } : {}),
    volumes: pub.volumes,
  };
}

/** The merge patch that makes an App's deploy-owned fields exactly `spec` (absent ones removed). */
export function specPatch(spec: DeploySpec): Record<DeployOwnedField, unknown> {
  const patch = Object.fromEntries(deployOwnedFields.map((f) => [f, spec[f] ?? null])) as Record<DeployOwnedField, unknown>;
  // Nested objects merge: every field of source is named so an old url cannot survive.
  patch.source = spec.source ? { digest: spec.source.digest, url: spec.source.url ?? null } : null;
  // The deploy's declarations are the app's whole policy: a deploy that declares none is public.
  patch.auth = spec.auth ? { rules: spec.auth.rules } : null;
  // Compose fills every field of a healthcheck, so merging it replaces the old one whole.
  return patch;
}

/** What a deploy's policy is, for people reading the deploy. */
function policySummary(auth: AuthPolicy | undefined): Record<string, unknown> {
  if (!auth) return {};
  return { auth: { rules: auth.rules.length, sources: [...new Set(auth.rules.map((r) => r.source))].slice(0, 20) } };
}

/**
 * The deploy-owned fields of what an App serves (its live revision, which is its spec unless a
 * newer spec is rolling out or failed), for forks and previews of it.
 */
export function deploySpecOf(app: AppRecord): DeploySpec | undefined {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- the generated type of status.live.spec is {} (the CRD keeps it schemaless); the rule takes {} for the same type
  const live = app.status?.live?.spec as Partial<App['spec']> | undefined;
  // The snapshot carries the policy those pages were deployed with.
  const s: Partial<App['spec']> = live?.kind ? live : app.spec;
  if (!s.kind) return undefined;
  const spec: Partial<Record<DeployOwnedField, unknown>> = {};
  for (const f of deployOwnedFields) {
    const v = s[f];
    // Unset, empty and empty lists are what a deploy that never set the field leaves (command and
    // args excepted: an empty list there is a deliberate override of the image's own).
    if (!v || (Array.isArray(v) && !v.length && f !== 'command' && f !== 'args')) continue;
    spec[f] = v;
  }
  // 8080 is every App's port unless a deploy says otherwise.
  if (s.port === 8080) delete spec.port;
  if (s.source) spec.source = { digest: s.source.digest, ...(s.source.url ? { url: s.source.url } : {}) };
  if (s.env?.length) spec.env = s.env.map((e) => ({ name: e.name, ...(e.value !== undefined ? { value: e.value } : {}) }));
  if (!s.auth?.rules.length) delete spec.auth;
  return spec as DeploySpec;
}
