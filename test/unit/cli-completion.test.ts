// Shell completion (cli/completion.ts): what `svc __complete` answers, read from every group's own
// usage, and the generated bash and zsh scripts run in the real shells against the compiled svc.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { candidates, completionGroup, parseUsage } from '../../cli/completion.js';
import { commandGroups } from '../../cli/groups.js';

const exec = promisify(execFile);
const svcJs = fileURLToPath(new URL('../../cli/svc.js', import.meta.url));
const complete = (...words: string[]) => candidates(words, commandGroups);

describe('svc __complete', () => {
  it('offers every group, and token and admin, after svc', () => {
    const all = complete('');
    for (const g of commandGroups) assert.ok(all.includes(g.name), g.name);
    assert.ok(all.includes('token') && all.includes('admin') && all.includes('completion'));
    assert.ok(!all.includes('__complete'));
    assert.deepEqual(complete('ap'), ['apps', 'api']);
    assert.deepEqual(complete('-'), ['--help']);
  });

  it("offers a group's subcommands, and each subcommand's options", () => {
    assert.deepEqual(complete('env', ''), ['ls', 'set', 'unset', 'import']);
    assert.deepEqual(complete('env', 'i'), ['import']);
    assert.deepEqual(complete('env', 'set', '--'), ['--help', '--token']);
    assert.deepEqual(complete('env', 'import', 'shop', '--'), ['--replace', '--help', '--token']);
    assert.deepEqual(complete('env', 'ls', '--j'), ['--json']);
    assert.deepEqual(complete('apps', 'create', 'shop', '--'), ['--image', '--port', '--machines', '--json', '--help', '--token']);
    assert.ok(!complete('apps', 'ls', '--').includes('--image'), 'apps ls does not take --image');
    assert.deepEqual(complete('completion', ''), ['bash', 'zsh']);
  });

  it('offers literal arguments after a placeholder, and nothing where a value or a name goes', () => {
    assert.deepEqual(complete('metrics', 'shop', ''), ['summary', 'requests', 'latency', 'machines']);
    assert.deepEqual(complete('metrics', ''), []);
    assert.deepEqual(complete('env', 'set', 'shop', ''), []);
    assert.deepEqual(complete('apps', 'create', '--image', ''), []);
    assert.deepEqual(complete('apps', '--image', 'x', ''), ['ls', 'get', 'create', 'rm', 'fork', 'expiry']);
    // bash splits --image=nginx at "=".
    assert.deepEqual(complete('apps', 'create', '--image', '=', ''), []);
    assert.deepEqual(complete('apps', 'create', '--image', '=', 'x', 'shop', '--j'), ['--json']);
    assert.deepEqual(complete('nosuch', ''), []);
  });

  it('knows token and admin, which svc runs outside the groups', () => {
    assert.deepEqual(complete('token', ''), ['inspect', 'attenuate']);
    assert.deepEqual(complete('token', 'attenuate', '--'), ['--token', '--apps', '--actions', '--expires-in']);
    assert.deepEqual(complete('token', 'inspect', '--'), ['--json']);
    assert.deepEqual(complete('token', 'attenuate', '--token', ''), []);
    assert.deepEqual(complete('admin', ''), ['create-account']);
    assert.deepEqual(complete('admin', 'create-account', '--'), ['--email', '--name']);
  });

  it('reads something sensible out of every group, however its usage is laid out', () => {
    for (const g of commandGroups) {
      const spec = parseUsage(g);
      assert.ok(spec.forms.length > 0, `${g.name}: no "  svc ${g.name} ..." line in its usage`);
      const subcommands = complete(g.name, '');
      const options = complete(g.name, '--').filter((o) => o !== '--help' && o !== '--token');
      assert.ok(subcommands.length + options.length > 0, `${g.name}: neither subcommands nor options`);
      for (const s of subcommands) assert.match(s, /^[a-z][a-z0-9-]*$/, `${g.name}: subcommand ${s}`);
      for (const o of complete(g.name, '-')) assert.match(o, /^--?[a-zA-Z][\w-]*$/, `${g.name}: option ${o}`);
      // Each subcommand's options are a subset of the group's.
      for (const s of subcommands) {
        for (const o of complete(g.name, s, '-')) assert.ok(complete(g.name, '-').includes(o), `${g.name} ${s}: ${o}`);
      }
    }
  });
});

describe('svc completion', () => {
  it('prints the script for bash or zsh, its usage with --help, and exits 2 for another shell', async () => {
    assert.match((await exec('node', [svcJs, 'completion', 'bash'])).stdout, /complete -o default -F _svc_completion svc/);
    assert.match((await exec('node', [svcJs, 'completion', 'zsh'])).stdout, /^#compdef svc\n/);
    const help = await exec('node', [svcJs, 'completion', '--help']);
    assert.match(help.stdout, /example:\n {2}svc completion bash > ~\/\.svc-completion\.bash && echo/);
    await assert.rejects(exec('node', [svcJs, 'completion', 'fish']), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /svc: unknown shell: fish/);
      assert.match(err.stderr, /svc completion bash\|zsh/);
      return true;
    });
    assert.ok(!(await exec('node', [svcJs, '--help'])).stdout.includes('__complete'));
    assert.match(completionGroup.synopsis, /svc completion bash\|zsh/);
  });

  it('__complete prints the candidates one per line, without a token or the API', async () => {
    const env = { PATH: process.env.PATH, SVC_API_URL: 'http://127.0.0.1:9/api' };
    const { stdout } = await exec('node', [svcJs, '__complete', 'env', ''], { env });
    assert.equal(stdout, 'ls\nset\nunset\nimport\n');
  });

  /** Runs `script` in a shell where svc is the compiled svc.js. */
  const shell = async (program: 'bash' | 'zsh', script: string) => {
    const args = program === 'bash' ? ['--norc', '--noprofile', '-c', script] : ['-f', '-c', script];
    return (await exec(program, args, { env: { PATH: process.env.PATH, SVC_JS: svcJs } })).stdout;
  };

  it('completes in bash', async () => {
    const out = await shell(
      'bash',
      `svc() { node "$SVC_JS" "$@"; }
source <(svc completion bash)
complete -p svc
reply() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _svc_completion; echo "[\${COMPREPLY[*]}]"; }
reply svc ''
reply svc ap
reply svc env ''
reply svc env set --
reply svc apps create --image = ''
reply svc token ''`,
    );
    const lines = out.trimEnd().split('\n');
    assert.equal(lines[0], 'complete -o default -F _svc_completion svc');
    const groups = [...commandGroups.map((g) => g.name), 'token', 'admin'];
    assert.deepEqual(lines.slice(1), [
      `[${groups.join(' ')}]`,
      '[apps api]',
      '[ls set unset import]',
      '[--help --token]',
      '[]',
      '[inspect attenuate]',
    ]);
  });

  it('completes in zsh, sourced after compinit and autoloaded from $fpath', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-zsh-'));
    try {
      await writeFile(join(dir, '_svc'), (await exec('node', [svcJs, 'completion', 'zsh'])).stdout);
      // compadd and _files only work inside a completion widget: stand-ins print what they were given.
      const harness = `svc() { node "$SVC_JS" "$@"; }
compadd() { [ "$1" = -- ] && shift; echo "[$*]"; }
_files() { echo files; }
reply() { words=("$@"); CURRENT=$#; _svc; }`;
      const sourced = await shell(
        'zsh',
        `autoload -U compinit && compinit -u -D
source <(node "$SVC_JS" completion zsh)
echo "svc: $_comps[svc]"
${harness}
reply svc ''
reply svc env ''
reply svc env set --
reply svc apps create --image ''`,
      );
      assert.deepEqual(sourced.trimEnd().split('\n'), [
        'svc: _svc',
        `[${[...commandGroups.map((g) => g.name), 'token', 'admin'].join(' ')}]`,
        '[ls set unset import]',
        '[--help --token]',
        'files',
      ]);
      const autoloaded = await shell(
        'zsh',
        `fpath=(${dir} $fpath)
autoload -U compinit && compinit -u -D
echo "svc: $_comps[svc]"
${harness}
reply svc admin ''
reply svc env ls --j`,
      );
      assert.deepEqual(autoloaded.trimEnd().split('\n'), ['svc: _svc', '[create-account]', '[--json]']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
