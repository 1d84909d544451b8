// Attack surface: the runtime that starts every tenant container (issue 30, item 9). Debian's runc
// 1.1.5 predates the November 2025 advisories (CVE-2025-31133, CVE-2025-52565, CVE-2025-52881:
// container escapes through masked paths, the /dev/console mount and racing procfs writes), fixed
// in runc 1.2.8, 1.3.3 and 1.4.0; Debian's containerd 1.6 is past its end of life and ignores
// hostUsers: false. Read from the running parts: each node's running containerd and its binary's
// own --version, the configuration it was started with, the runc each of its runtimes (machines'
// and sandboxes') names, and that binary's own answer to --version.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { processIds } from '../support/processes.js';

const run = promisify(execFile);

/** The first runc release of each line with the November 2025 fixes; later lines have them all. */
const fixedIn: Array<[number, number, number]> = [
  [1, 2, 8],
  [1, 3, 3],
  [1, 4, 0],
];

function hasNovember2025Fixes(version: string): boolean {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (major !== 1) return major > 1;
  const line = fixedIn.find(([, mi]) => mi === minor);
  if (line) return patch >= line[2];
  return minor > 4;
}

/** Every running containerd: its binary and the --config of its command line. */
async function runningContainerds(): Promise<Array<{ binary: string; config: string }>> {
  const found: Array<{ binary: string; config: string }> = [];
  for (const pid of await processIds()) {
    const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').then(
      (s) => s.split('\0'),
      (): string[] => [],
    );
    if (!argv[0]?.endsWith('containerd')) continue;
    const i = argv.indexOf('--config');
    if (i > 0 && argv[i + 1]) found.push({ binary: argv[0], config: argv[i + 1]! });
  }
  return found;
}

describe("security: the nodes' runtime is containerd 2 with a runc that has the November 2025 fixes", () => {
  it('knows which versions are fixed', () => {
    for (const v of ['1.1.5', '1.1.15', '1.2.7', '1.3.2', '1.2.0-rc.1', 'unknown']) assert.equal(hasNovember2025Fixes(v), false, v);
    for (const v of ['1.2.8', '1.3.3', '1.4.0', '1.5.2', '1.6.0-rc.1']) assert.equal(hasNovember2025Fixes(v), true, v);
  });

  it('every node runs a supported containerd 2 (user namespaces, runc by absolute path)', async () => {
    const containerds = await runningContainerds();
    assert.ok(containerds.length >= 2, `a containerd per node (found ${containerds.map((c) => c.config).join(', ') || 'none'})`);
    for (const { binary } of containerds) {
      const { stdout } = await run(binary, ['--version']);
      const version = / v?(\d+)\.(\d+)\.\d+/.exec(stdout);
      assert.ok(version && Number(version[1]) >= 2, `${binary} is ${stdout.trim()}, not containerd 2`);
    }
  });

  it('every runtime of every running containerd names a runc with the fixes', async () => {
    const configs = (await runningContainerds()).map((c) => c.config);
    assert.ok(configs.length >= 2, `a containerd per node (found ${configs.join(', ') || 'none'})`);
    for (const config of configs) {
      const toml = await readFile(config, 'utf8');
      const binaries = [...toml.matchAll(/^\s*BinaryName\s*=\s*"([^"]+)"/gm)].map((m) => m[1]!);
      // Two runtimes: runc (machines, builds, databases) and svc-sandbox. A runtime naming no
      // binary would run whatever `runc` is on containerd's PATH (Debian's).
      const runtimes = [...toml.matchAll(/^\s*runtime_type\s*=/gm)].length;
      assert.equal(binaries.length, runtimes, `${config}: every runtime names its runc`);
      for (const binary of binaries) {
        const { stdout } = await run(binary, ['--version']);
        const version = /^runc version (\S+)/m.exec(stdout)?.[1] ?? 'unknown';
        assert.ok(hasNovember2025Fixes(version), `${config}: ${binary} is runc ${version}, without the November 2025 fixes`);
        assert.match(stdout, /^libseccomp: /m, `${binary} enforces seccomp profiles`);
      }
    }
  });
});
