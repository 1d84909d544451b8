// The pure parts of the console's sandboxes, builds and import pages (console/src/sandboxes.ts): a
// sandbox's state in words and order, a streamed exec's NDJSON put together however it is cut, its
// end in words with the CLI's exit code, builds newest first with their source in words, the Git
// repositories an app's builds came from, the import form's check, and the pages' routes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hrefOf, routeOf, type Route } from '../../console/src/routes.js';
import {
  addOutput,
  buildSourceInWords,
  emptyRun,
  endRun,
  exitCodeOf,
  feedRun,
  repositoriesOf,
  repositoryProblem,
  resourcesInWords,
  runEndInWords,
  runOfResult,
  sandboxOpen,
  sandboxStateInWords,
  sortBuilds,
  sortSandboxes,
  type BuildFacts,
  type ExecEnd,
  type SandboxFacts,
} from '../../console/src/sandboxes.js';

const sandbox = (over: Partial<SandboxFacts> = {}): SandboxFacts => ({
  id: 'sb-0000000000000001',
  state: 'ready',
  reason: 'Claimed',
  message: null,
  launch: 'warm',
  created_at: '2026-11-28T09:00:00Z',
  ...over,
});

const end = (over: Partial<ExecEnd> = {}): ExecEnd => ({
  status: 'ok',
  exit_code: 0,
  signal: null,
  reason: null,
  truncated: { stdout: false, stderr: false },
  bytes: { stdout: 6, stderr: 0 },
  duration_ms: 21,
  ...over,
});

const build = (id: string, created_at: string, source: BuildFacts['source'], status = 'succeeded'): BuildFacts => ({
  id,
  status,
  created_at,
  source,
});
const git = (url: string, ref: string | null, commit: string | null, path: string | null = null): BuildFacts['source'] => ({
  type: 'git',
  url,
  ref,
  commit,
  path,
});

describe('console sandboxes: states', () => {
  it('says each state in words, with the API’s message or the reason said out', () => {
    assert.deepEqual(sandboxStateInWords(sandbox({ state: 'pending', reason: 'Starting', launch: null })), {
      text: 'Starting',
      tone: 'busy',
    });
    assert.deepEqual(sandboxStateInWords(sandbox()), { text: 'Ready (warm launch)', tone: 'ok' });
    assert.deepEqual(sandboxStateInWords(sandbox({ launch: null })), { text: 'Ready', tone: 'ok' });
    assert.deepEqual(sandboxStateInWords(sandbox({ state: 'ended', reason: 'Deleted' })), { text: 'Ended: deleted', tone: 'idle' });
    assert.deepEqual(sandboxStateInWords(sandbox({ state: 'ended', reason: 'IdleTimeout', message: 'no exec for 300 s' })), {
      text: 'Ended: no exec for 300 s',
      tone: 'idle',
    });
    assert.deepEqual(
      sandboxStateInWords(sandbox({ state: 'failed', reason: 'PodFailed', message: 'its pod ended: OOMKilled (exit 137)' })),
      {
        text: 'Failed: its pod ended: OOMKilled (exit 137)',
        tone: 'bad',
      },
    );
    assert.equal(sandboxStateInWords(sandbox({ state: 'failed', reason: 'Novel' })).text, 'Failed: Novel');
    assert.equal(sandboxStateInWords(sandbox({ state: 'ended', reason: null })).text, 'Ended');
  });

  it('runs commands only in a pending or ready one', () => {
    assert.equal(sandboxOpen({ state: 'pending' }), true);
    assert.equal(sandboxOpen({ state: 'ready' }), true);
    assert.equal(sandboxOpen({ state: 'ended' }), false);
    assert.equal(sandboxOpen({ state: 'failed' }), false);
  });

  it('lists open ones first, then newest first', () => {
    const list = [
      sandbox({ id: 'sb-a', state: 'ended', created_at: '2026-11-28T09:30:00Z' }),
      sandbox({ id: 'sb-b', created_at: '2026-11-28T09:00:00Z' }),
      sandbox({ id: 'sb-c', state: 'pending', created_at: '2026-11-28T09:10:00Z' }),
      sandbox({ id: 'sb-d', state: 'failed', created_at: null }),
    ];
    assert.deepEqual(
      sortSandboxes(list).map((s) => s.id),
      ['sb-c', 'sb-b', 'sb-a', 'sb-d'],
    );
    assert.equal(list[0]!.id, 'sb-a', 'the list given is left as it was');
  });

  it('says resources with their units', () => {
    assert.equal(resourcesInWords({ cpu: '1', memory: '512Mi', disk: '256Mi' }), '1 CPU, 512 MiB memory, 256 MiB disk');
    assert.equal(resourcesInWords({ cpu: '500m', memory: '2Gi', disk: '1G' }), '500m CPU, 2 GiB memory, 1G disk');
  });
});

describe('console sandboxes: a streamed run', () => {
  const stream = [
    '{"type":"stdout","data":"hel"}\n',
    '{"type":"stdout","data":"lo\\n"}\n',
    '{"type":"stderr","data":"warn\\n"}\n',
    '{"type":"stdout","data":"bye\\n"}\n',
    '{"type":"exit","status":"ok","exit_code":0,"signal":null,"reason":null,"truncated":{"stdout":false,"stderr":false},"bytes":{"stdout":10,"stderr":5},"duration_ms":12}\n',
  ].join('');

  it('joins the chunks of one stream and keeps stdout and stderr apart, in order, however the text is cut', () => {
    for (const size of [1, 3, 7, 40, stream.length]) {
      let run = emptyRun;
      for (let i = 0; i < stream.length; i += size) run = feedRun(run, stream.slice(i, i + size));
      run = endRun(run);
      assert.deepEqual(
        run.parts,
        [
          { stream: 'stdout', text: 'hello\n' },
          { stream: 'stderr', text: 'warn\n' },
          { stream: 'stdout', text: 'bye\n' },
        ],
        `cut every ${size}`,
      );
      assert.equal(run.end?.exit_code, 0);
      assert.equal(run.end?.status, 'ok');
      assert.equal('type' in (run.end ?? {}), false);
      assert.equal(run.rest, '');
      assert.equal(run.garbled, 0);
    }
  });

  it('applies a last line that has no newline once the stream ends', () => {
    const run = feedRun(emptyRun, '{"type":"stdout","data":"x"}');
    assert.deepEqual(run.parts, []);
    assert.deepEqual(endRun(run).parts, [{ stream: 'stdout', text: 'x' }]);
  });

  it('counts lines that are not the API’s instead of showing them as output', () => {
    const run = endRun(feedRun(emptyRun, '<html>\n{"type":"nope"}\n\n{"type":"stdout","data":"ok"}\n'));
    assert.equal(run.garbled, 2);
    assert.deepEqual(run.parts, [{ stream: 'stdout', text: 'ok' }]);
  });

  it('keeps the newest output past its most, counting what went', () => {
    let run = addOutput(emptyRun, { stream: 'stdout', text: 'aaaa' }, 6);
    run = addOutput(run, { stream: 'stderr', text: 'bbb' }, 6);
    assert.deepEqual(run.parts, [
      { stream: 'stdout', text: 'aaa' },
      { stream: 'stderr', text: 'bbb' },
    ]);
    assert.equal(run.dropped, 1);
    run = addOutput(run, { stream: 'stdout', text: 'cccccc' }, 6);
    assert.deepEqual(run.parts, [{ stream: 'stdout', text: 'cccccc' }]);
    assert.equal(run.dropped, 7);
    assert.equal(addOutput(run, { stream: 'stdout', text: '' }), run);
  });

  it('takes a whole JSON answer too', () => {
    const run = runOfResult({ ...end(), stdout: 'hello\n', stderr: '' });
    assert.deepEqual(run.parts, [{ stream: 'stdout', text: 'hello\n' }]);
    assert.equal(run.end?.exit_code, 0);
    assert.equal('stdout' in (run.end ?? {}), false);
  });

  it('says how a run ended, with the exit code the CLI would exit with', () => {
    assert.deepEqual(runEndInWords(end()), { text: 'Exit code 0, in 21 ms', tone: 'ok' });
    assert.deepEqual(runEndInWords(end({ exit_code: 7, duration_ms: 1500 })), { text: 'Exit code 7, in 1.5 s', tone: 'bad' });
    assert.equal(
      runEndInWords(end({ status: 'timed_out', exit_code: null, signal: 'SIGKILL', reason: 'killed after the timeout of 60 s' })).text,
      'Timed out: killed after the timeout of 60 s (exit code 124)',
    );
    assert.equal(
      runEndInWords(end({ status: 'failed', exit_code: null, reason: 'no such file or directory: foo (not found on PATH)' })).text,
      'Failed: no such file or directory: foo (not found on PATH) (exit code 127)',
    );
    assert.match(
      runEndInWords(end({ truncated: { stdout: true, stderr: false }, bytes: { stdout: 2_000_000, stderr: 0 } })).text,
      /output cut \(stdout 2,000,000 bytes, stderr 0 bytes produced\)/,
    );
    assert.equal(exitCodeOf({ status: 'ok', exit_code: 3, signal: null }), 3);
    assert.equal(exitCodeOf({ status: 'timed_out', exit_code: null, signal: 'SIGKILL' }), 124);
    assert.equal(exitCodeOf({ status: 'failed', exit_code: 137, signal: 'SIGKILL' }), 137);
  });
});

describe('console builds and imports', () => {
  it('orders builds newest first', () => {
    const builds = [
      build('bld-1', '2026-11-28T09:00:00Z', { type: 'upload', digest: 'sha256:aa' }),
      build('bld-3', '2026-11-28T09:20:00Z', { type: 'upload', digest: 'sha256:bb' }),
      build('bld-2', '2026-11-28T09:20:00Z', { type: 'upload', digest: 'sha256:cc' }),
    ];
    assert.deepEqual(
      sortBuilds(builds).map((b) => b.id),
      ['bld-3', 'bld-2', 'bld-1'],
    );
  });

  it('says where a build’s source came from', () => {
    assert.equal(buildSourceInWords({ source: { type: 'upload', digest: 'sha256:0123456789abcdef0123' } }), 'an upload (0123456789ab)');
    assert.equal(
      buildSourceInWords({ source: git('https://git.example.com/me/site.git', 'main', '25d18f90aabbccddeeff') }),
      'https://git.example.com/me/site.git, branch main, commit 25d18f90aabb',
    );
    assert.equal(
      buildSourceInWords({ source: git('https://git.example.com/me/mono.git', null, null, 'web') }),
      'https://git.example.com/me/mono.git (web)',
    );
  });

  it('finds each repository and branch once, with its newest build', () => {
    const site = 'https://git.example.com/me/site.git';
    const builds = [
      build('bld-1', '2026-11-28T09:00:00Z', git(site, 'main', 'c1')),
      build('bld-2', '2026-11-28T09:10:00Z', { type: 'upload', digest: 'sha256:aa' }),
      build('bld-3', '2026-11-28T09:20:00Z', git(site, 'main', 'c3'), 'building'),
      build('bld-4', '2026-11-28T09:05:00Z', git(site, 'feature', 'c4')),
    ];
    assert.deepEqual(repositoriesOf(builds), [
      { url: site, ref: 'main', path: null, commit: 'c3', at: '2026-11-28T09:20:00Z', build: 'bld-3', status: 'building' },
      { url: site, ref: 'feature', path: null, commit: 'c4', at: '2026-11-28T09:05:00Z', build: 'bld-4', status: 'succeeded' },
    ]);
    assert.deepEqual(repositoriesOf([builds[1]!]), []);
  });

  it('checks the repository before an import is sent', () => {
    assert.equal(repositoryProblem('https://git.example.com/me/site.git'), undefined);
    assert.equal(repositoryProblem(' http://10.0.0.5/me/site.git '), undefined, 'the API decides on http');
    assert.equal(repositoryProblem('  '), 'name the repository (an https URL)');
    assert.match(repositoryProblem('git.example.com/me/site') ?? '', /is not a URL/);
    assert.match(repositoryProblem('ssh://git@git.example.com/me/site.git') ?? '', /must be an https URL \(not ssh\)/);
  });
});

describe('console sandboxes and builds: routes', () => {
  const cases: Array<[string, Route]> = [
    ['/console/sandboxes', { page: 'sandboxes' }],
    ['/console/sandboxes/sb-4f0c2a1b3c4d5e6f', { page: 'sandbox', id: 'sb-4f0c2a1b3c4d5e6f' }],
    ['/console/apps/shop/builds', { page: 'app-builds', name: 'shop' }],
    ['/console/apps/shop/builds/bld-4c1e0a9b2d3f5e67', { page: 'app-builds', name: 'shop', build: 'bld-4c1e0a9b2d3f5e67' }],
    ['/console/import', { page: 'import' }],
  ];
  for (const [path, route] of cases)
    it(`${path} round-trips`, () => {
      assert.deepEqual(routeOf(path), route);
      assert.equal(hrefOf(route), path);
      assert.deepEqual(routeOf(hrefOf(route)), route);
    });

  it('encodes what it puts in a path', () => {
    const route: Route = { page: 'sandbox', id: 'a/b c' };
    assert.equal(hrefOf(route), '/console/sandboxes/a%2Fb%20c');
    assert.deepEqual(routeOf(hrefOf(route)), route);
  });

  it('leaves longer paths to not-found', () => {
    assert.equal(routeOf('/console/sandboxes/sb-1/extra').page, 'not-found');
    assert.equal(routeOf('/console/apps/shop/builds/bld-1/extra').page, 'not-found');
  });
});
