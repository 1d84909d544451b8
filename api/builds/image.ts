// A service's image, made without a daemon from what its build sent: the builder image (which has
// Node.js, npm, Python and pip) as the base, and one layer on top, the built tree under /app, with a
// config that starts the plan's start command. Made with the OCI distribution API alone: the base's
// layers are mounted from its repository (never copied through here), the new layer is the very
// tar.gz the build sent (its digest is the artifact's), and the manifest is pushed by digest.
// The platform's registry asks for a token (docs/decisions/0025-registry-auth.md): it is asked for
// with the build's own credential, which the token service lets push to this app's repository only.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { BuildPlan } from '../../lib/builds/plan.js';
import { DomainError } from '../../lib/errors.js';
import { fetchRegistryToken, parseBearerChallenge, repositoryScope, type RegistryCredential } from '../../lib/registry/bearer.js';
import { appRepository } from '../../lib/registry/names.js';

const manifestTypes = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];
const layerType = 'application/vnd.oci.image.layer.v1.tar+gzip';

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

interface Manifest {
  schemaVersion: 2;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
}

interface ImageConfig {
  architecture?: string;
  os?: string;
  config?: {
    Env?: string[];
    Entrypoint?: string[] | null;
    Cmd?: string[] | null;
    WorkingDir?: string;
    User?: string;
    ExposedPorts?: Record<string, object>;
  };
  rootfs: { type: 'layers'; diff_ids: string[] };
  history?: Array<{ created?: string; created_by?: string; empty_layer?: boolean }>;
}

/** `host[:port]/repo/path:tag` (or `@sha256:…`) split into its parts. */
export function parseReference(ref: string): { registry: string; repository: string; reference: string } {
  const slash = ref.indexOf('/');
  if (slash < 0) throw new Error(`image ${ref} names no registry`);
  const registry = ref.slice(0, slash);
  const rest = ref.slice(slash + 1);
  const at = rest.indexOf('@');
  if (at >= 0) return { registry, repository: rest.slice(0, at), reference: rest.slice(at + 1) };
  const colon = rest.lastIndexOf(':');
  return colon > 0
    ? { registry, repository: rest.slice(0, colon), reference: rest.slice(colon + 1) }
    : { registry, repository: rest, reference: 'latest' };
}

/** Plain HTTP for a registry on loopback (the local platform's), HTTPS elsewhere. */
const base = (registry: string) => `${/^(127\.|localhost[:/]|localhost$|\[::1\])/.test(registry) ? 'http' : 'https'}://${registry}`;

async function registryCall(url: string, init: RequestInit & { duplex?: 'half' }, what: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(120_000) });
  } catch (err) {
    throw new DomainError('unavailable', `the image registry cannot be reached (${what}): ${(err as Error).message}`, err);
  }
  return res;
}

async function expectOk(res: Response, what: string): Promise<Response> {
  if (!res.ok)
    throw new DomainError('unavailable', `the image registry refused ${what}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return res;
}

/** The sha256 of the tar inside a tar.gz file: the layer's diff_id. */
async function diffIdOf(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), createGunzip(), hash);
  return `sha256:${hash.digest('hex')}`;
}

/**
 * The Authorization header calls to `registry` need: none when it asks for nothing (a registry
 * without authentication), else a token for `scopes` from the token service its 401 names, asked
 * once, before any call, so that no streamed upload is ever sent twice.
 */
async function authorization(registry: string, scopes: string[], credential: RegistryCredential): Promise<Record<string, string>> {
  const res = await registryCall(`${base(registry)}/v2/`, {}, "the registry's API");
  await res.arrayBuffer();
  if (res.ok) return {};
  const challenge = res.status === 401 ? parseBearerChallenge(res.headers.get('www-authenticate')) : undefined;
  if (!challenge) throw new DomainError('unavailable', `the image registry answered ${res.status} to /v2/ and named no token service`);
  return { authorization: `Bearer ${await fetchRegistryToken(challenge, scopes, credential)}` };
}

export interface ServiceImage {
  /** `registry/repo@sha256:…`: what the App runs. */
  reference: string;
  digest: string;
}

/**
 * Pushes `<registry>/builds/<namespace>/<app>:<build>`: the base image and the build's tree (the
 * tar.gz at `layerFile`, whose digest is `layerDigest`) started by `plan.start`.
 */
export async function pushServiceImage(o: {
  registry: string;
  baseImage: string;
  namespace: string;
  app: string;
  build: string;
  layerFile: string;
  layerDigest: string;
  plan: BuildPlan;
  /** The build's own credential (its user name and build credential), what the token service knows it by. */
  credential: RegistryCredential;
}): Promise<ServiceImage> {
  if (!o.plan.start && !o.plan.docker) throw new DomainError('invalid', 'the plan has no start command: nothing to run as a service');
  const from = parseReference(o.baseImage);
  const repository = appRepository(o.namespace, o.app);
  const target = base(o.registry);
  const source = base(from.registry);
  // The base image is the platform's, in the same registry (its layers are mounted from there).
  const sameRegistry = from.registry === o.registry;
  const auth = await authorization(
    o.registry,
    [repositoryScope(repository, ['pull', 'push']), ...(sameRegistry ? [repositoryScope(from.repository, ['pull'])] : [])],
    o.credential,
  );
  const sourceAuth = sameRegistry ? auth : {};
  const manifest = (await (
    await expectOk(
      await registryCall(
        `${source}/v2/${from.repository}/manifests/${from.reference}`,
        { headers: { ...sourceAuth, accept: manifestTypes.join(', ') } },
        'the base manifest',
      ),
      `the base image ${o.baseImage}`,
    )
  ).json()) as Manifest;
  const config = (await (
    await expectOk(
      await registryCall(`${source}/v2/${from.repository}/blobs/${manifest.config.digest}`, { headers: sourceAuth }, 'the base config'),
      'the base config',
    )
  ).json()) as ImageConfig;

  // The base's layers, into the target repository by a mount (the registry links them, no bytes move).
  for (const layer of manifest.layers) {
    const head = await registryCall(`${target}/v2/${repository}/blobs/${layer.digest}`, { method: 'HEAD', headers: auth }, 'a layer');
    if (head.ok) continue;
    const mount = await registryCall(
      `${target}/v2/${repository}/blobs/uploads/?mount=${layer.digest}&from=${from.repository}`,
      { method: 'POST', headers: auth },
      'a layer mount',
    );
    if (mount.status !== 201) {
      if (from.registry !== o.registry)
        throw new DomainError(
          'unavailable',
          `the base image ${o.baseImage} is in another registry than ${o.registry}: its layers cannot be mounted`,
        );
      await expectOk(mount, `mounting layer ${layer.digest}`);
    }
  }

  const upload = async (digest: string, body: Buffer | (() => Readable), size: number, what: string) => {
    const head = await registryCall(`${target}/v2/${repository}/blobs/${digest}`, { method: 'HEAD', headers: auth }, what);
    if (head.ok) return;
    const started = await expectOk(
      await registryCall(`${target}/v2/${repository}/blobs/uploads/`, { method: 'POST', headers: auth }, what),
      `an upload of ${what}`,
    );
    const location = new URL(started.headers.get('location') ?? '', target);
    location.searchParams.set('digest', digest);
    const payload = Buffer.isBuffer(body) ? body : (Readable.toWeb(body()) as ReadableStream);
    await expectOk(
      await registryCall(
        location.toString(),
        {
          method: 'PUT',
          headers: { ...auth, 'content-type': 'application/octet-stream', 'content-length': String(size) },
          body: payload,
          duplex: 'half',
        },
        what,
      ),
      `the upload of ${what}`,
    );
  };
  const layerSize = (await stat(o.layerFile)).size;
  await upload(o.layerDigest, () => createReadStream(o.layerFile), layerSize, "the build's layer");

  const env = (config.config?.Env ?? []).filter((e) => !/^(PATH|PORT|NODE_ENV|PYTHONPATH)=/.test(e));
  const path = (config.config?.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5) ?? '/usr/local/bin:/usr/bin:/bin';
  const docker = o.plan.docker;
  const port = docker?.port ?? 8080;
  const next: ImageConfig = {
    ...config,
    config: {
      ...config.config,
      ...(docker
        ? {
            // The Dockerfile's settings: its ENV over the base's, its WORKDIR, CMD and ENTRYPOINT.
            Env: [
              ...env,
              `PATH=${docker.env.PATH ?? path}`,
              ...Object.entries(docker.env)
                .filter(([k]) => k !== 'PATH' && k !== 'PORT')
                .map(([k, v]) => `${k}=${v}`),
              `PORT=${port}`,
            ],
            Entrypoint: docker.entrypoint,
            Cmd: docker.cmd,
            WorkingDir: docker.workdir,
          }
        : {
            Env: [
              ...env,
              `PATH=/app/node_modules/.bin:/app/.python/bin:${path}`,
              `PORT=${port}`,
              'NODE_ENV=production',
              'PYTHONPATH=/app/.python',
            ],
            // The plan's start line, through a shell as a Procfile's would be ($PORT expands there).
            Entrypoint: ['/bin/sh', '-c', o.plan.start!],
            Cmd: null,
            WorkingDir: '/app',
          }),
      User: '1000:1000',
      ExposedPorts: { [`${port}/tcp`]: {} },
    },
    rootfs: { type: 'layers', diff_ids: [...config.rootfs.diff_ids, await diffIdOf(o.layerFile)] },
    history: [...(config.history ?? []), { created: new Date(0).toISOString(), created_by: `svc build ${o.build}: ${o.plan.why}` }],
  };
  const configBytes = Buffer.from(JSON.stringify(next));
  const configDigest = `sha256:${createHash('sha256').update(configBytes).digest('hex')}`;
  await upload(configDigest, configBytes, configBytes.length, 'the image config');

  const out: Manifest = {
    schemaVersion: 2,
    mediaType: manifestTypes[0]!,
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: configBytes.length },
    layers: [...manifest.layers, { mediaType: layerType, digest: o.layerDigest, size: layerSize }],
  };
  const manifestBytes = Buffer.from(JSON.stringify(out));
  const digest = `sha256:${createHash('sha256').update(manifestBytes).digest('hex')}`;
  await expectOk(
    await registryCall(
      `${target}/v2/${repository}/manifests/${o.build}`,
      { method: 'PUT', headers: { ...auth, 'content-type': manifestTypes[0]! }, body: manifestBytes },
      'the manifest',
    ),
    'the image manifest',
  );
  return { reference: `${o.registry}/${repository}@${digest}`, digest };
}
