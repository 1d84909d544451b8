// The policy agent's thin half: loads a Program into the kernel in the order `stages` says (sets,
// with isolation only kept where it was; the chains in one iptables-restore transaction; then the
// isolation sets), then removes what the previous program had and this one has not: its chains,
// then its sets (a set still referred to cannot be destroyed).
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { ipsetRestoreInput, iptablesRestoreInput, isolationSets, stages, type Isolation, type Program } from './program.js';

const run = promisify(execFile);

function feed(cmd: string, args: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${stderr.trim()}`)),
    );
    child.stdin.end(input);
  });
}

/** Our chains and sets as the kernel has them now. */
async function present(): Promise<{ chains: string[]; sets: string[] }> {
  const { stdout: rules } = await run('iptables', ['-w', '-S']);
  const chains = rules.split('\n').flatMap((l) => (l.startsWith('-N SVC-P-') ? [l.slice(3)] : []));
  const { stdout: names } = await run('ipset', ['list', '-n']);
  const sets = names.split('\n').filter((n) => n.startsWith('svc-'));
  return { chains, sets };
}

/** The pods each isolation set holds in the kernel now (none for a set not made yet). */
async function isolationNow(): Promise<Isolation> {
  const read = async (name: string) => {
    const { stdout } = await run('ipset', ['save', name]).catch(() => ({ stdout: '' }));
    return stdout.split('\n').flatMap((l) => (l.startsWith(`add ${name} `) ? [l.split(' ')[2]!] : []));
  };
  const [inSet, outSet] = await Promise.all(isolationSets.map(read));
  return { 'svc-isolated-in': inSet!, 'svc-isolated-out': outSet! };
}

/**
 * The isolation this process last loaded: read from the kernel only when unknown (at start, or after
 * a failed apply), as two more process spawns per sync cost the host CPU it lacks when hundreds of
 * pods start at once.
 */
let loaded: Isolation | undefined;

export async function applyProgram(p: Program): Promise<{ removedChains: number; removedSets: number }> {
  const current = loaded ?? (await isolationNow());
  loaded = undefined;
  const staged = stages(p, current);
  await feed('ipset', ['restore', '-exist'], ipsetRestoreInput({ sets: staged.sets }));
  await feed('iptables-restore', ['-w', '--noflush'], iptablesRestoreInput(p));
  await feed('ipset', ['restore', '-exist'], ipsetRestoreInput({ sets: staged.isolate }));
  const entriesOf = (name: keyof Isolation) => staged.isolate.find((s) => s.name === name)?.entries ?? [];
  loaded = { 'svc-isolated-in': entriesOf('svc-isolated-in'), 'svc-isolated-out': entriesOf('svc-isolated-out') };
  const now = await present();
  const keepChains = new Set(p.chains);
  const keepSets = new Set(p.sets.map((s) => s.name));
  const staleChains = now.chains.filter((c) => !keepChains.has(c));
  for (const c of staleChains) await run('iptables', ['-w', '-F', c]);
  for (const c of staleChains) await run('iptables', ['-w', '-X', c]);
  const staleSets = now.sets.filter((s) => !keepSets.has(s));
  for (const s of staleSets) await run('ipset', ['destroy', s]).catch(() => undefined);
  return { removedChains: staleChains.length, removedSets: staleSets.length };
}
