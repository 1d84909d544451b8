// The build plan (lib/builds/plan.ts) over a table of example repositories, made here as trees of
// files: what each is, with which commands, into which output, producing what; and the trees that
// cannot be built, each refused saying why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planBuild, PlanError, planSchema, type BuildPlan, type SourceTree } from '../../lib/builds/plan.js';

const tree = (files: Record<string, string>): SourceTree => ({ paths: Object.keys(files), read: (p) => files[p] });
const pkg = (v: Record<string, unknown>) => JSON.stringify(v);

interface Case {
  name: string;
  files: Record<string, string>;
  expect: Partial<BuildPlan>;
}

const cases: Case[] = [
  {
    name: 'a Vite site with a lock file: npm ci, npm run build, into dist/',
    files: {
      'package.json': pkg({ scripts: { build: 'vite build', dev: 'vite' }, devDependencies: { vite: '^5' } }),
      'package-lock.json': '{}',
      'index.html': '<div id=app>',
      'src/main.js': '',
    },
    expect: {
      kind: 'static',
      install: ['npm ci'],
      build: ['npm run build'],
      start: null,
      outputDir: 'dist',
      caches: ['.npm', '.cache/yarn', '.local/share/pnpm/store'],
      produces: { type: 'artifact' },
    },
  },
  {
    name: 'a Create React App site (its start script a development server): into build/',
    files: {
      'package.json': pkg({
        scripts: { build: 'react-scripts build', start: 'react-scripts start' },
        dependencies: { 'react-scripts': '5' },
      }),
      'public/index.html': '',
    },
    // Its start script is a development server, not the site.
    expect: { kind: 'static', start: null, build: ['npm run build'], outputDir: 'build' },
  },
  {
    name: 'an Eleventy site without a lock file: npm install, into _site/',
    files: { 'package.json': pkg({ scripts: { build: 'eleventy' }, devDependencies: { '@11ty/eleventy': '2' } }), 'index.md': '# hi' },
    expect: { kind: 'static', install: ['npm install'], outputDir: '_site' },
  },
  {
    name: 'a build script of an unknown tool: into the first of dist/, build/, public/, out/ the tree has',
    files: { 'package.json': pkg({ scripts: { build: 'node make-site.js' } }), 'make-site.js': '', 'public/favicon.ico': '' },
    expect: { kind: 'static', outputDir: 'public', build: ['npm run build'] },
  },
  {
    name: 'an Express service with yarn: its start script through corepack, the Node version of .nvmrc',
    files: {
      'package.json': pkg({ scripts: { start: 'node server.js' }, dependencies: { express: '4' } }),
      'yarn.lock': '',
      '.nvmrc': 'v20.11.0\n',
      'server.js': '',
    },
    expect: {
      kind: 'container',
      why: 'package.json has a start script (express)',
      language: { name: 'node', version: 'v20.11.0', versionFrom: '.nvmrc' },
      install: ['corepack yarn install --frozen-lockfile'],
      build: [],
      start: 'corepack yarn run start',
      produces: { type: 'image', dockerfile: null },
    },
  },
  {
    name: 'a Fastify service with no start script: node of its main, with a build step (TypeScript)',
    files: {
      'package.json': pkg({ main: 'dist/index.js', scripts: { build: 'tsc' }, dependencies: { fastify: '4' }, engines: { node: '>=22' } }),
      'pnpm-lock.yaml': '',
      'src/index.ts': '',
    },
    expect: {
      kind: 'container',
      language: { name: 'node', version: '>=22', versionFrom: 'package.json engines.node' },
      install: ['corepack pnpm install --frozen-lockfile'],
      build: ['corepack pnpm run build'],
      start: 'node dist/index.js',
    },
  },
  {
    name: 'a FastAPI service: pip into .python, uvicorn on $PORT, the version of .python-version',
    files: { 'requirements.txt': 'fastapi==0.110\nuvicorn[standard]\n', 'main.py': '', '.python-version': '3.11\n' },
    expect: {
      kind: 'container',
      language: { name: 'python', version: '3.11', versionFrom: '.python-version' },
      install: ['python3 -m pip install --target .python -r requirements.txt'],
      start: 'python3 -m uvicorn main:app --host 0.0.0.0 --port $PORT',
      caches: ['.cache/pip'],
    },
  },
  {
    name: 'a Flask service with gunicorn',
    files: { 'requirements.txt': 'flask\ngunicorn\n', 'app.py': '', 'runtime.txt': 'python-3.11.4' },
    expect: {
      kind: 'container',
      start: 'python3 -m gunicorn --bind 0.0.0.0:$PORT app:app',
      language: { name: 'python', version: '3.11.4', versionFrom: 'runtime.txt' },
    },
  },
  {
    name: "a Django project with gunicorn: its package's wsgi module",
    files: { 'requirements.txt': 'Django>=5\ngunicorn\n', 'manage.py': '', 'shop/wsgi.py': '', 'shop/settings.py': '' },
    expect: { kind: 'container', start: 'python3 -m gunicorn --bind 0.0.0.0:$PORT shop.wsgi' },
  },
  {
    name: 'a plain Python server: python3 its entry',
    files: { 'pyproject.toml': '[project]\nname = "x"\n', 'server.py': '' },
    expect: { kind: 'container', install: ['python3 -m pip install --target .python .'], start: 'python3 server.py' },
  },
  {
    name: 'a handler tree: nothing to build',
    files: { 'api/hello.js': 'export default () => "hi"', 'api/users/[id].py': '' },
    expect: { kind: 'handlers', install: [], build: [], produces: { type: 'artifact' } },
  },
  {
    name: 'a handler tree with dependencies: installed without dev dependencies, not built',
    files: { 'handlers/pay.mjs': '', 'package.json': pkg({ dependencies: { stripe: '14' } }), 'package-lock.json': '{}' },
    expect: { kind: 'handlers', install: ['npm ci --omit=dev'], build: [] },
  },
  {
    name: 'a Markdown site (its README does not count as a page, its docs do)',
    files: { 'README.md': '', 'docs/index.md': '# Docs', 'docs/setup.md': '' },
    expect: { kind: 'markdown', why: '2 Markdown pages and no HTML' },
  },
  {
    name: 'HTML pages: static as they are',
    files: { 'index.html': '<h1>hi', 'about/index.html': '', 'style.css': '' },
    expect: { kind: 'static', build: [], outputDir: '.' },
  },
  {
    name: 'a Dockerfile: an image from it (its steps parsed), whatever else is there',
    files: {
      Dockerfile: 'FROM node:22\nWORKDIR /app\nCOPY package*.json ./\nRUN npm ci\nCOPY . .\nEXPOSE 3000\nCMD ["node", "index.js"]\n',
      'package.json': pkg({ scripts: { start: 'node .' } }),
      'index.js': '',
    },
    expect: {
      kind: 'container',
      why: 'a Dockerfile at the root (on node:22, 4 steps)',
      produces: { type: 'image', dockerfile: 'Dockerfile' },
    },
  },
  {
    name: 'a compose file: its services, before anything else',
    files: { 'compose.yaml': 'services: {}', Dockerfile: 'FROM x' },
    expect: { kind: 'compose', compose: 'compose.yaml' },
  },
];

const refused: Array<{ name: string; files: Record<string, string>; error: RegExp }> = [
  { name: 'an empty tree', files: {}, error: /the tree is empty/ },
  {
    name: 'only a README, a licence and dotfiles',
    files: { 'README.md': '', LICENSE: '', '.gitignore': '' },
    error: /the tree is empty \(or holds only a README/,
  },
  {
    name: 'Go code without a Dockerfile',
    files: { 'main.go': '', 'go.mod': '', 'README.md': '' },
    error: /nothing to build in 2 files: no Dockerfile, compose file, package.json/,
  },
  { name: 'a package.json that is not JSON', files: { 'package.json': '{ "scripts": ' }, error: /package.json is not valid JSON/ },
  {
    name: 'a package without a build or a start',
    files: { 'package.json': pkg({ dependencies: { lodash: '4' } }) },
    error: /neither a build script .* nor a start script/,
  },
  {
    name: 'Python requirements without an entry',
    files: { 'requirements.txt': 'requests\n', 'lib/util.py': '' },
    error: /no entry to start/,
  },
  {
    name: 'a multi-stage Dockerfile',
    files: { Dockerfile: 'FROM node:22 AS b\nWORKDIR /app\nFROM node:22\nCMD ["x"]' },
    error: /Dockerfile:3: FROM: a second FROM \(a multi-stage build\) is not supported/,
  },
  {
    name: 'a Dockerfile on a base from elsewhere',
    files: { Dockerfile: 'FROM golang:1.22\nWORKDIR /app\nCMD ["x"]' },
    error: /golang:1\.22 is not a base this platform has/,
  },
  {
    name: 'a Dockerfile running as root',
    files: { Dockerfile: 'FROM debian\nUSER root\nWORKDIR /app\nCMD ["x"]' },
    error: /USER: builds and machines never run as root/,
  },
  {
    name: 'a Dockerfile with an instruction it cannot honour',
    files: { Dockerfile: 'FROM python:3.11\nWORKDIR /app\nHEALTHCHECK CMD true\nCMD ["x"]' },
    error: /Dockerfile:3: HEALTHCHECK: is not supported/,
  },
  {
    name: 'a Dockerfile that starts nothing',
    files: { Dockerfile: 'FROM node\nWORKDIR /app\nRUN echo hi' },
    error: /has neither CMD nor ENTRYPOINT/,
  },
];

describe('build plan', () => {
  for (const c of cases) {
    it(c.name, () => {
      const plan = planBuild(tree(c.files));
      const picked = Object.fromEntries(Object.keys(c.expect).map((k) => [k, plan[k as keyof BuildPlan]]));
      assert.deepEqual(picked, c.expect);
    });
  }
  for (const r of refused) {
    it(`refuses ${r.name}`, () => {
      assert.throws(
        () => planBuild(tree(r.files)),
        (err: unknown) => err instanceof PlanError && r.error.test(err.message),
      );
    });
  }
  it('parses a Dockerfile into its steps: continuations, both ENV forms, relative WORKDIR, exec and shell forms', () => {
    const plan = planBuild(
      tree({
        Dockerfile: [
          '# a comment',
          'ARG V=1',
          'FROM node:22-bookworm',
          'ENV A=1 B="two words"',
          'ENV C three',
          'WORKDIR /srv',
          'WORKDIR app',
          'COPY package.json ./',
          'RUN npm ci \\',
          '  && echo $A',
          'COPY . .',
          'EXPOSE 3000/tcp',
          'ENTRYPOINT node server.js',
        ].join('\n'),
      }),
    );
    const d = plan.docker!;
    assert.deepEqual(
      [d.from, d.workdir, d.env, d.port, d.entrypoint, d.cmd],
      ['node:22-bookworm', '/srv/app', { A: '1', B: 'two words', C: 'three' }, 3000, ['/bin/sh', '-c', 'node server.js'], null],
    );
    assert.deepEqual(
      d.steps.filter((x) => x.op === 'copy' || x.op === 'run'),
      [
        { op: 'copy', sources: ['package.json'], dest: '/srv/app/' },
        { op: 'run', shell: 'npm ci    && echo $A', exec: null },
        { op: 'copy', sources: ['.'], dest: '/srv/app' },
      ],
    );
    assert.ok(planSchema.safeParse(plan).success, "what the builder sends passes the API's check");
  });

  it('is plain JSON (the Build status and the import preview carry it as it is)', () => {
    const plan = planBuild(tree(cases[0]!.files));
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
  });
});
