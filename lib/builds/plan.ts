// A source tree analysed into a build plan, before anything is built (as Railpack and Nixpacks do):
// what the tree is, in which language and version, the commands that install, build and start it,
// where its output is, what to cache, and what the build produces (an artifact for the kinds the
// runtime serves, an image for services). Pure: it sees the paths and reads the few small files that
// decide, so the plan is unit-tested over a table of trees and shown by an import preview before
// anything runs. docs/api/builds.md documents the fields; the rules are the order below.
import { posix } from 'node:path';
import { z } from 'zod';
import { DockerfileError, parseDockerfile, type DockerImage } from './dockerfile.js';

/** What the analysis sees of a tree: its file paths (relative, `/`-separated) and the text of small files. */
export interface SourceTree {
  readonly paths: readonly string[];
  /** The text of a file of the tree, or undefined when it is not there (or too large to matter). */
  read(path: string): string | undefined;
}

export type PlanKind = 'static' | 'html' | 'markdown' | 'handlers' | 'container' | 'compose';

export interface BuildPlan {
  kind: PlanKind;
  /** Why the tree is that kind, naming the files that decided. */
  why: string;
  language?: { name: 'node' | 'python'; version: string | null; versionFrom: string | null };
  /** Shell commands, run in order in the tree's root; empty when there is nothing to do. */
  install: string[];
  build: string[];
  /** A service's start command (argv through a shell); null for the kinds the runtime serves. */
  start: string | null;
  /** The directory that is deployed, relative to the root (`.`: the tree itself). */
  outputDir: string;
  /** Directories kept between builds of the app (dependency caches), relative to the build's home. */
  caches: string[];
  produces: { type: 'artifact' } | { type: 'image'; dockerfile: string | null };
  /** A compose file's path, for `compose` trees (the deploy reads it). */
  compose?: string;
  /** A Dockerfile's steps and image settings, for trees built from one (lib/builds/dockerfile.ts). */
  docker?: DockerImage;
}

export class PlanError extends Error {}

const line = z.string().max(4096);
/**
 * A plan as it arrives from a build's pod: the pod runs the tenant's commands, so what it sends is
 * checked as any input is (shape and sizes) before the platform keeps or uses it.
 */
export const planSchema: z.ZodType<BuildPlan> = z.strictObject({
  kind: z.enum(['static', 'html', 'markdown', 'handlers', 'container', 'compose']),
  why: line,
  language: z
    .strictObject({ name: z.enum(['node', 'python']), version: z.string().max(64).nullable(), versionFrom: z.string().max(256).nullable() })
    .optional(),
  install: z.array(line).max(16),
  build: z.array(line).max(16),
  start: line.nullable(),
  outputDir: z
    .string()
    .max(1024)
    .regex(/^(\.|[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*)$/, 'must be a relative path inside the tree')
    .refine((d) => !d.split('/').includes('..'), 'must not leave the tree'),
  caches: z.array(z.string().max(256)).max(16),
  produces: z.union([
    z.strictObject({ type: z.literal('artifact') }),
    z.strictObject({ type: z.literal('image'), dockerfile: z.string().max(1024).nullable() }),
  ]),
  compose: z.string().max(1024).optional(),
  docker: z
    .strictObject({
      from: z.string().max(512),
      steps: z
        .array(
          z.union([
            z.strictObject({ op: z.literal('workdir'), path: z.string().max(1024) }),
            z.strictObject({ op: z.literal('copy'), sources: z.array(z.string().max(1024)).max(64), dest: z.string().max(1024) }),
            z.strictObject({ op: z.literal('run'), shell: line.nullable(), exec: z.array(line).max(64).nullable() }),
            z.strictObject({ op: z.literal('env'), name: z.string().max(256), value: line }),
          ]),
        )
        .max(256),
      workdir: z.string().max(1024).regex(/^\//, 'must be absolute'),
      env: z.record(z.string().max(256), line),
      entrypoint: z.array(line).max(64).nullable(),
      cmd: z.array(line).max(64).nullable(),
      port: z.number().int().min(1).max(65535).nullable(),
    })
    .optional(),
});

const composeFiles = ['compose.yaml', 'compose.yml', 'docker-compose.yaml', 'docker-compose.yml'];
const isHtml = (p: string) => /\.html?$/i.test(p);
const isMarkdown = (p: string) => /\.(md|markdown)$/i.test(p);
const isHandler = (p: string) => /^(api|handlers)\/.+\.(js|mjs|cjs|ts|mts|cts|py|rb|go|sh)$/i.test(p);
/** Files every repository may have that say nothing about what it is. */
const incidental =
  /^(readme|license|licence|changelog|contributing|code_of_conduct|security)(\.[a-z]+)?$|^\.(git|github|gitignore|gitattributes|editorconfig|dockerignore|nvmrc|node-version|python-version)(\/|$)/i;

/** Web frameworks whose presence in a package's dependencies makes it a service. */
const nodeServers = [
  'express',
  'fastify',
  'koa',
  'hono',
  '@hono/node-server',
  '@nestjs/core',
  'next',
  'nuxt',
  '@remix-run/serve',
  'restify',
  'hapi',
  '@hapi/hapi',
  'polka',
  'socket.io',
];
/** Static-site tools and the directory each builds into. */
const staticTools: Array<[string, string]> = [
  ['vite', 'dist'],
  ['astro', 'dist'],
  ['parcel', 'dist'],
  ['react-scripts', 'build'],
  ['@docusaurus/core', 'build'],
  ['gatsby', 'public'],
  ['@11ty/eleventy', '_site'],
  ['vitepress', '.vitepress/dist'],
  ['hexo', 'public'],
];

interface PackageJson {
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  engines?: { node?: string };
  main?: string;
}

function parseJson<T>(text: string, file: string): T {
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as T;
  } catch (err) {
    throw new PlanError(`${file} is not valid JSON (${(err as Error).message})`);
  }
}

/** The first line of a version file (`.nvmrc`: `v20`, `lts/*`), or undefined. */
const versionLine = (text: string | undefined) => text?.split('\n')[0]?.trim() || undefined;

function nodePlan(tree: SourceTree, pkg: PackageJson): BuildPlan {
  const has = (p: string) => tree.paths.includes(p);
  const deps = { ...pkg.devDependencies, ...pkg.dependencies };
  const scripts = pkg.scripts ?? {};
  const [version, versionFrom] = pkg.engines?.node
    ? [pkg.engines.node, 'package.json engines.node']
    : versionLine(tree.read('.nvmrc'))
      ? [versionLine(tree.read('.nvmrc'))!, '.nvmrc']
      : versionLine(tree.read('.node-version'))
        ? [versionLine(tree.read('.node-version'))!, '.node-version']
        : [null, null];
  const language = { name: 'node' as const, version, versionFrom };
  // Locked installs where there is a lock file: what was tested is what is built.
  const install =
    has('package-lock.json') || has('npm-shrinkwrap.json')
      ? ['npm ci']
      : has('yarn.lock')
        ? ['corepack yarn install --frozen-lockfile']
        : has('pnpm-lock.yaml')
          ? ['corepack pnpm install --frozen-lockfile']
          : ['npm install'];
  const npmCaches = ['.npm', '.cache/yarn', '.local/share/pnpm/store'];
  const run = (script: string) =>
    has('yarn.lock') ? `corepack yarn run ${script}` : has('pnpm-lock.yaml') ? `corepack pnpm run ${script}` : `npm run ${script}`;
  const server = nodeServers.find((d) => d in deps);
  const tool = staticTools.find(([d]) => d in deps);
  // A service depends on a web framework, or says how it starts and no static-site tool builds it
  // (the start script of a Vite or Create React App site is a development server, not the site).
  if (server || (scripts.start && !(tool && scripts.build))) {
    const start = scripts.start ? run('start') : `node ${pkg.main ?? 'index.js'}`;
    return {
      kind: 'container',
      why: scripts.start ? `package.json has a start script${server ? ` (${server})` : ''}` : `package.json depends on ${server}`,
      language,
      install,
      build: scripts.build ? [run('build')] : [],
      start,
      outputDir: '.',
      caches: npmCaches,
      produces: { type: 'image', dockerfile: null },
    };
  }
  if (scripts.build) {
    const outputDir =
      tool?.[1] ?? ['dist', 'build', 'public', 'out', '_site'].find((d) => tree.paths.some((p) => p.startsWith(`${d}/`))) ?? 'dist';
    return {
      kind: 'static',
      why: `package.json has a build script${tool ? ` (${tool[0]}, into ${tool[1]}/)` : ''} and no start script: a site built into ${outputDir}/`,
      language,
      install,
      build: [run('build')],
      start: null,
      outputDir,
      caches: npmCaches,
      produces: { type: 'artifact' },
    };
  }
  throw new PlanError(
    'package.json has neither a build script (a site to build) nor a start script or web framework dependency (a service to run)',
  );
}

/** Python web services: a requirements file or pyproject, and an entry module. */
function pythonPlan(tree: SourceTree): BuildPlan | undefined {
  const has = (p: string) => tree.paths.includes(p);
  const manifest = ['requirements.txt', 'pyproject.toml', 'Pipfile'].find(has);
  if (!manifest) return undefined;
  const reqs = (tree.read('requirements.txt') ?? tree.read('pyproject.toml') ?? tree.read('Pipfile') ?? '').toLowerCase();
  const versionFile = ['.python-version', 'runtime.txt'].find(has);
  const version = versionFile ? (versionLine(tree.read(versionFile))?.replace(/^python-/, '') ?? null) : null;
  const language = { name: 'python' as const, version, versionFrom: versionFile ?? null };
  const install =
    manifest === 'requirements.txt'
      ? ['python3 -m pip install --target .python -r requirements.txt']
      : ['python3 -m pip install --target .python .'];
  const entry = ['main.py', 'app.py', 'wsgi.py', 'server.py'].find(has);
  const module = entry?.replace(/\.py$/, '');
  let start: string | undefined;
  const djangoWsgi = tree.paths.find((p) => /^[A-Za-z_][A-Za-z0-9_]*\/wsgi\.py$/.test(p));
  if (has('manage.py') && /\bdjango\b/.test(reqs))
    start =
      djangoWsgi && /\bgunicorn\b/.test(reqs)
        ? `python3 -m gunicorn --bind 0.0.0.0:$PORT ${posix.dirname(djangoWsgi)}.wsgi`
        : 'python3 manage.py runserver 0.0.0.0:$PORT';
  else if (module && /\buvicorn\b/.test(reqs)) start = `python3 -m uvicorn ${module}:app --host 0.0.0.0 --port $PORT`;
  else if (module && /\bgunicorn\b/.test(reqs)) start = `python3 -m gunicorn --bind 0.0.0.0:$PORT ${module}:app`;
  else if (entry) start = `python3 ${entry}`;
  if (!start)
    throw new PlanError(`${manifest} found, but no entry to start (main.py, app.py, wsgi.py, server.py, or manage.py with Django)`);
  return {
    kind: 'container',
    why: `${manifest} and ${entry ?? 'manage.py'}: a Python service`,
    language,
    install,
    build: [],
    start,
    outputDir: '.',
    caches: ['.cache/pip'],
    produces: { type: 'image', dockerfile: null },
  };
}

const filesOnly = (kind: 'static' | 'html' | 'markdown' | 'handlers', why: string): BuildPlan => ({
  kind,
  why,
  install: [],
  build: [],
  start: null,
  outputDir: '.',
  caches: [],
  produces: { type: 'artifact' },
});

/** The plan of a tree, or a PlanError saying why nothing in it can be built. */
export function planBuild(tree: SourceTree): BuildPlan {
  const paths = tree.paths.filter((p) => !p.startsWith('.git/'));
  const has = (p: string) => paths.includes(p);
  const compose = composeFiles.find(has);
  if (compose) {
    return {
      kind: 'compose',
      why: `${compose} describes the services`,
      install: [],
      build: [],
      start: null,
      outputDir: '.',
      caches: [],
      produces: { type: 'artifact' },
      compose,
    };
  }
  if (has('Dockerfile')) {
    let docker: DockerImage;
    try {
      docker = parseDockerfile(tree.read('Dockerfile') ?? '');
    } catch (err) {
      if (err instanceof DockerfileError) throw new PlanError(err.message);
      throw err;
    }
    return {
      kind: 'container',
      why: `a Dockerfile at the root (on ${docker.from}, ${docker.steps.length} steps)`,
      install: [],
      build: [],
      start: null,
      outputDir: '.',
      caches: ['.npm', '.cache/pip'],
      produces: { type: 'image', dockerfile: 'Dockerfile' },
      docker,
    };
  }
  if (has('package.json')) {
    const pkg = parseJson<PackageJson>(tree.read('package.json') ?? '{}', 'package.json');
    // A handler tree may have a package.json for its modules' dependencies: installed, not built.
    const handlers = paths.filter(isHandler);
    if (handlers.length && !pkg.scripts?.build && !pkg.scripts?.start) {
      const p = filesOnly('handlers', `${handlers.length} handler modules under api/ or handlers/, with package.json dependencies`);
      return {
        ...p,
        language: { name: 'node', version: pkg.engines?.node ?? null, versionFrom: pkg.engines?.node ? 'package.json engines.node' : null },
        install: has('package-lock.json') ? ['npm ci --omit=dev'] : ['npm install --omit=dev'],
        caches: ['.npm'],
      };
    }
    return nodePlan(tree, pkg);
  }
  const python = pythonPlan(tree);
  if (python) return python;
  const handlers = paths.filter(isHandler);
  const html = paths.filter(isHtml);
  if (handlers.length && !html.some((p) => /(^|\/)index\.html?$/i.test(p)))
    return filesOnly('handlers', `${handlers.length} handler modules under api/ or handlers/ (${handlers.slice(0, 3).join(', ')})`);
  // Whether pages are an HTML app (platform bindings) is the deploy's to tell from their contents.
  if (html.length)
    return filesOnly('static', `${html.length} HTML pages, served as they are (or as an HTML app, if they use platform bindings)`);
  const markdown = paths.filter((p) => isMarkdown(p) && !incidental.test(posix.basename(p)));
  if (markdown.length) return filesOnly('markdown', `${markdown.length} Markdown pages and no HTML`);
  const meaningful = paths.filter((p) => !incidental.test(p) && !incidental.test(posix.basename(p)));
  throw new PlanError(
    meaningful.length
      ? `nothing to build in ${meaningful.length} files: no Dockerfile, compose file, package.json, requirements.txt or pyproject.toml, HTML or Markdown page, or handler modules under api/ or handlers/`
      : 'the tree is empty (or holds only a README, a licence and dotfiles)',
  );
}
