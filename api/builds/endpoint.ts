// PUT /builds/<namespace>/<build>/plan and /output: where a Build's builder sends what it made, on
// the machine listener (pods hold no API token). The builder shows a build credential the Build
// controller minted for exactly that build (lib/artifacts/credential.ts): it sends that build's plan
// and output and opens nothing. The builder's container also runs the tenant's commands, so what
// arrives is checked like any input (the plan's shape, the output's size) and is only ever that
// build's. The output goes into the artifact store by its digest, streamed, as the account's (counted
// against its storage: past the limit it is refused, and the build fails saying why); a service's is
// also made into an image (image.ts). The Build learns both through annotations its controller reads.
import type Koa from 'koa';
import { bearerOf, checkBuildCredential } from '../../lib/artifacts/credential.js';
import { UploadTooLarge, type ArtifactStore } from '../../lib/artifacts/store.js';
import { buildAnnotations, buildIdPattern, outputOf, planOf, terminalPhases, type BuildOutput } from '../../lib/builds/index.js';
import { planSchema, type BuildPlan } from '../../lib/builds/plan.js';
import type { Build } from '../../lib/resources/index.js';
import { DomainError } from '../../lib/errors.js';
import { readLimited } from '../../lib/http/body.js';
import type { Logger } from '../../lib/logger.js';
import type { BuildRepository } from './repository.js';
import type { AccountStorage } from '../storage/account-storage.js';
import { buildUser } from '../../lib/registry/names.js';
import { pushServiceImage } from './image.js';

export const buildPrefix = '/builds/';
const namespacePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const planLimitBytes = 64 * 1024;

export interface BuildEndpointDeps {
  store: ArtifactStore;
  /** Outputs are the account's, counted against its storage (403 quota_exceeded past its limit). */
  storage: Pick<AccountStorage, 'admit'>;
  accountOf: (namespace: string) => Promise<string | undefined>;
  builds: BuildRepository;
  key: Buffer | undefined;
  limitBytes: number;
  /** Where service images are pushed, and the image they are made on; no registry, no services. */
  registry: string | undefined;
  baseImage: string;
  log: Logger;
  clock: () => Date;
}

export function buildEndpoint(d: BuildEndpointDeps): Koa.Middleware {
  /** Builds whose output this process is storing: a second upload meanwhile is refused. */
  const storing = new Set<string>();
  return async (ctx, next) => {
    if (!ctx.path.startsWith(buildPrefix)) return next() as Promise<void>;
    const fail = (status: number, error: string) => {
      ctx.status = status;
      ctx.body = { error };
    };
    const [namespace, id, what, ...rest] = ctx.path.slice(buildPrefix.length).split('/');
    if (
      !namespace ||
      !id ||
      !namespacePattern.test(namespace) ||
      !buildIdPattern.test(id) ||
      (what !== 'plan' && what !== 'output') ||
      rest.length
    ) {
      return fail(404, 'builds send to /builds/<namespace>/<build>/plan and /builds/<namespace>/<build>/output (PUT)');
    }
    if (ctx.method !== 'PUT') {
      ctx.set('Allow', 'PUT');
      return fail(405, `method ${ctx.method} not allowed on ${ctx.path}`);
    }
    if (!d.key) return fail(503, 'build credentials are not configured on this API (SVC_ARTIFACT_KEY)');
    const credential = bearerOf(ctx.get('Authorization'));
    const check = checkBuildCredential(d.key, namespace, id, credential, d.clock());
    if (!check.ok) {
      if (check.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="builds"');
      return fail(check.status, check.error);
    }
    const build = d.builds.get(namespace, id);
    if (!build) return fail(404, `build ${id} is not there`);
    if (build.status?.phase && terminalPhases.has(build.status.phase))
      return fail(409, `build ${id} has ended (${build.status.phase}): it takes nothing more`);

    if (what === 'plan') {
      const text = (await readLimited(ctx.req, planLimitBytes))?.toString('utf8');
      if (text === undefined) return fail(413, `a plan larger than ${planLimitBytes} bytes is refused`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return fail(400, 'the plan is not JSON');
      }
      const plan = planSchema.safeParse(parsed);
      if (!plan.success)
        return fail(
          400,
          `the plan is not a build plan: ${plan.error.issues
            .slice(0, 3)
            .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
            .join('; ')}`,
        );
      await d.builds.annotate(namespace, id, { [buildAnnotations.plan]: JSON.stringify(plan.data) });
      ctx.status = 204;
      return;
    }

    const kind = ctx.get('x-svc-output');
    if (kind !== 'artifact' && kind !== 'image') return fail(400, 'say what the output is: X-Svc-Output: artifact or image');
    const plan = planOf(build);
    if (kind === 'image' && !plan) return fail(409, 'send the plan first: an image is made from its start command');
    if (kind === 'image' && !d.registry)
      return fail(409, 'this platform has no registry for built images (SVC_BUILD_REGISTRY): services cannot be built here');
    const key = `${namespace}/${id}`;
    if (storing.has(key)) return fail(409, `build ${id} is storing its output already: a build sends one output`);
    storing.add(key);
    try {
      await storeOutput(d, ctx, { namespace, id, build, kind, plan, credential: credential! }, fail);
    } finally {
      storing.delete(key);
    }
  };
}

/** Stages an output, keeps it if it is the build's first (or the same again), makes a service's image. */
async function storeOutput(
  d: BuildEndpointDeps,
  ctx: Koa.Context,
  o: { namespace: string; id: string; build: Build; kind: 'artifact' | 'image'; plan: BuildPlan | undefined; credential: string },
  fail: (status: number, error: string) => void,
): Promise<void> {
  const { namespace, id, build, kind, plan, credential } = o;
  let staged;
  try {
    staged = await d.store.stage(ctx.req, d.limitBytes);
  } catch (err) {
    if (err instanceof UploadTooLarge) return fail(413, `an output larger than ${d.limitBytes} bytes is refused`);
    throw err;
  }
  if (staged.size === 0) {
    await staged.discard();
    return fail(400, 'the output is empty');
  }
  // One output per build: the same bytes again (a builder retrying after a lost answer) get the
  // first answer; other bytes are refused, so a build's commands cannot swap what it stored.
  const earlier = outputOf(build);
  if (earlier) {
    await staged.discard();
    if (earlier.digest !== staged.digest)
      return fail(409, `build ${id} has stored its output (${earlier.digest}) already: a build sends one output`);
    ctx.status = 200;
    ctx.body = earlier;
    return;
  }
  const account = await d.accountOf(namespace);
  if (!account) {
    await staged.discard();
    return fail(404, `no account has namespace ${namespace}`);
  }
  try {
    await d.storage.admit(account, namespace, staged, `build ${id}'s output`);
  } catch (err) {
    if (err instanceof DomainError && err.kind === 'quota_exceeded') return fail(403, err.message);
    throw err;
  }
  const output: BuildOutput = { digest: staged.digest, bytes: staged.size };
  if (kind === 'image') {
    try {
      const image = await pushServiceImage({
        registry: d.registry!,
        baseImage: d.baseImage,
        namespace,
        app: build.spec.app,
        build: id,
        layerFile: await d.store.localFile(staged.digest),
        layerDigest: staged.digest,
        plan: plan!,
        // The build's credential, checked above: the token service lets it push to its app's repository only.
        credential: { username: buildUser(namespace, id), password: credential },
      });
      output.image = image.reference;
    } catch (err) {
      if (err instanceof DomainError) return fail(err.kind === 'invalid' ? 400 : 503, err.message);
      throw err;
    }
  }
  await d.builds.annotate(namespace, id, { [buildAnnotations.output]: JSON.stringify(output) });
  // Read back before the next upload is let in, so that it meets this one.
  await d.builds.until(namespace, id, (b) => outputOf(b) !== undefined, 5000);
  d.log.info(
    { namespace, build: id, app: build.spec.app, digest: output.digest, bytes: output.bytes, image: output.image },
    'Build output stored',
  );
  ctx.status = 201;
  ctx.body = output;
}
