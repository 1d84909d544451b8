// `builder clone`: the `source` init container of a Build from Git. A shallow fetch of one ref (or
// the exact commit the API resolved it to) into the workspace, over HTTPS; a token, when the
// repository needs one, is sent as a header through git's environment (never on a command line,
// never in the workspace's .git/config), and this container is the only one that has it.
//
// Env: SVC_GIT_URL, SVC_GIT_REF (default: the remote's HEAD), SVC_GIT_COMMIT (optional),
// SVC_GIT_TOKEN (optional), SVC_BUILD_WORKSPACE.
import { spawn } from 'node:child_process';

function git(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, env, stdio: ['ignore', 'inherit', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      process.stderr.write(d);
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? 1, err }));
  });
}

export async function clone(say: (line: string) => void, fail: (message: string) => never): Promise<void> {
  const url = process.env.SVC_GIT_URL;
  const dir = process.env.SVC_BUILD_WORKSPACE ?? '/workspace';
  if (!url) fail('SVC_GIT_URL is not set');
  const ref = process.env.SVC_GIT_REF;
  const commit = process.env.SVC_GIT_COMMIT;
  const token = process.env.SVC_GIT_TOKEN;
  // The workspace is the kubelet's (root-owned, the pod's group): git must take it as ours.
  const config: Array<[string, string]> = [
    ['safe.directory', dir],
    ...(token
      ? [['http.extraHeader', `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`] as [string, string]]
      : []),
  ];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? '/tmp',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_COUNT: String(config.length),
    ...Object.fromEntries(
      config.flatMap(([k, v], i) => [
        [`GIT_CONFIG_KEY_${i}`, k],
        [`GIT_CONFIG_VALUE_${i}`, v],
      ]),
    ),
  };
  const shown = url.replace(/\/\/[^@/]*@/, '//***@');
  say(`fetching ${shown} ${commit ? `at ${commit}` : ref ? `branch or tag ${ref}` : '(default branch)'}`);
  const started = Date.now();
  const step = async (args: string[], what: string) => {
    const { code, err } = await git(args, dir, env);
    if (code !== 0) fail(`${what}: ${err.trim().split('\n').slice(-3).join(' ') || `git exited with code ${code}`}`);
  };
  await step(['init', '--quiet', '.'], 'git init failed');
  await step(
    ['fetch', '--quiet', '--depth=1', '--no-tags', url, commit ?? ref ?? 'HEAD'],
    `cannot fetch ${commit ?? ref ?? 'the default branch'} of ${shown}`,
  );
  await step(['checkout', '--quiet', '--detach', 'FETCH_HEAD'], 'git checkout failed');
  say(`fetched in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
