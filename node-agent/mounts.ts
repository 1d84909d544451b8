// Builds the bwrap arguments that show a pod's volumes at their mountPath in a private mount
// namespace, without touching the host's files. bwrap creates a missing mount point inside the
// namespace, but on a bind of the host root that would create it on the host too; so the nearest
// existing ancestor of a missing mount point is replaced, inside the namespace only, by a tmpfs
// holding binds of everything the host has there.
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';

export interface Mount {
  hostPath: string;
  mountPath: string;
  readOnly: boolean;
}

/** bwrap argv prefix for `mounts` over the host root; [] when there is nothing to mount. */
export function bwrapArgs(mounts: readonly Mount[]): string[] {
  if (!mounts.length) return [];
  const sorted = [...mounts]
    .map((m) => ({ ...m, target: canonical(path.resolve('/', m.mountPath)) }))
    // Parents first, so a mount inside another mount's path lands on top of it.
    .sort((a, b) => a.target.length - b.target.length);
  const anchors = sorted.filter((m) => !existsSync(m.target)).map((m) => nearestExisting(m.target));
  // No --die-with-parent: bwrap must outlive a SIGTERM its container ignores until the grace period
  // ends (container-process.ts sends SIGTERM past it, and SIGKILL to the whole group).
  const args = ['bwrap'];
  const shadowed = new Set<string>();
  // A new directory right under / needs a root of our own: a tmpfs with the host's top level bound in.
  if (anchors.includes('/')) shadow('/', args, shadowed);
  else args.push('--dev-bind', '/', '/');
  for (const anchor of anchors) if (!shadowed.has(anchor)) shadow(anchor, args, shadowed);
  for (const m of sorted) args.push(m.readOnly ? '--ro-bind' : '--bind', m.hostPath, m.target);
  args.push('--');
  return args;
}

/** The path with its existing part's symlinks resolved (/var/run/x -> /run/x): mounts go on real directories. */
function canonical(target: string): string {
  let existing = target;
  while (!existsSync(existing)) existing = path.dirname(existing);
  return path.join(realpathSync(existing), path.relative(existing, target));
}

function nearestExisting(target: string): string {
  let dir = path.dirname(target);
  while (!existsSync(dir)) dir = path.dirname(dir);
  return dir;
}

function shadow(dir: string, args: string[], shadowed: Set<string>): void {
  shadowed.add(dir);
  args.push('--tmpfs', dir);
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (lstatSync(p).isSymbolicLink()) args.push('--symlink', readlinkSync(p), p);
    else args.push('--dev-bind', p, p);
  }
}

/** Where a sandboxed container finds its own files, and starts. */
export const sandboxHome = '/home/sandbox';

/**
 * bwrap argv prefix for a sandboxed container: a fresh root holding only the system directories
 * (read-only), its own folder at /home/sandbox, a private /tmp, its own /proc and a minimal /dev,
 * and its volumes. Nothing else of the host (no /work, /root or /home) is visible.
 */
export function sandboxArgs(ownDir: string, mounts: readonly Mount[], unshareNet: boolean): string[] {
  const args = ['bwrap', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', 'sandbox'];
  // Only where the pod network cannot isolate the pod itself (loopback mode).
  if (unshareNet) args.push('--unshare-net');
  for (const dir of ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32', '/etc']) {
    if (!existsSync(dir)) continue;
    if (lstatSync(dir).isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--bind', ownDir, sandboxHome, '--chdir', sandboxHome);
  args.push('--setenv', 'HOME', sandboxHome);
  for (const m of mounts) args.push(m.readOnly ? '--ro-bind' : '--bind', m.hostPath, path.resolve('/', m.mountPath));
  args.push('--');
  return args;
}
