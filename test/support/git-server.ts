// A Git server for tests: git's own smart-HTTP backend (git http-backend, as CGI) over bare
// repositories in a temporary directory, on a port of the range pods may reach (build pods clone
// from it), optionally asking for a token as a code host does (HTTP basic, any user name).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listenOnMachinePort } from './api.js';

export interface GitServer {
  /** `http://<host>:<port>` as pods and the API reach it. */
  base: string;
  /** Makes (or adds to) bare repository `name` with a commit of `files` on `branch`; answers the commit. */
  commit(name: string, branch: string, files: Record<string, string>): string;
  /** Repositories that answer only with this token. */
  protect(name: string, token: string): void;
  close(): Promise<void>;
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.test', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
  }).trim();

export async function startGitServer(host: string): Promise<GitServer> {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-git-'));
  const tokens = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const repo = url.pathname.split('/')[1]?.replace(/\.git$/, '') ?? '';
    const token = tokens.get(repo);
    if (token) {
      const given = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const password = given ? Buffer.from(given, 'base64').toString().split(':').slice(1).join(':') : undefined;
      if (password !== token) {
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end('authentication required');
        return;
      }
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: req.socket.remoteAddress ?? '',
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const [k, ...v] = line.split(':');
        if (!k) continue;
        if (k.toLowerCase() === 'status') status = Number(v.join(':').trim().split(' ')[0]);
        else headers[k] = v.join(':').trim();
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
  });
  const port = await listenOnMachinePort(server);
  return {
    base: `http://${host}:${port}`,
    commit(name, branch, files) {
      const bare = path.join(root, `${name}.git`);
      const work = mkdtempSync(path.join(tmpdir(), 'svc-git-work-'));
      try {
        execFileSync('git', ['init', '--quiet', '--bare', '-b', 'main', bare]);
        git(work, 'init', '--quiet');
        git(work, 'remote', 'add', 'origin', bare);
        // Start from the branch as it is (or from main, for a new branch).
        const has = (b: string) => git(bare, 'branch', '--list', b) !== '';
        if (has(branch) || has('main')) {
          git(work, 'fetch', '--quiet', 'origin', has(branch) ? branch : 'main');
          git(work, 'checkout', '--quiet', '-B', branch, 'FETCH_HEAD');
        } else git(work, 'checkout', '--quiet', '-b', branch);
        for (const [p, content] of Object.entries(files)) {
          mkdirSync(path.dirname(path.join(work, p)), { recursive: true });
          writeFileSync(path.join(work, p), content);
        }
        git(work, 'add', '-A');
        git(work, 'commit', '--quiet', '--allow-empty', '-m', `commit on ${branch}`);
        git(work, 'push', '--quiet', 'origin', `${branch}:${branch}`);
        return git(work, 'rev-parse', 'HEAD');
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    protect(name, token) {
      tokens.set(name, token);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
