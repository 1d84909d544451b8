// A local volume's own filesystem: a sparse file of the claim's size formatted ext4 and loop-mounted
// at the volume's directory, so that writes past the size fail with ENOSPC inside the machine and
// `df` there shows the volume, not the node's disk (issue 30: a directory on the shared root let a
// 16 MiB volume take 64 MiB). Project quotas would do the same without loop devices, but need mount
// options of the root filesystem that a host running the platform cannot be assumed to have
// (docs/decisions/0023-disks.md). The image sits beside the directory, `<dir>.img`; hack/nodes.sh
// mounts the images again before the kubelets start.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, rmdir, stat, statfs, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export function imageOf(dir: string): string {
  return `${dir}.img`;
}

export function hasImage(dir: string): boolean {
  return existsSync(imageOf(dir));
}

/** Bytes of a claim's storage request (`16Mi`, `1Gi`, `500M`, `1073741824`); undefined for any other form. */
export function claimBytes(quantity: string): number | undefined {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!m) return undefined;
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

/** Whether `dir` is a mount point (another device than its parent's). */
export async function isMounted(dir: string): Promise<boolean> {
  try {
    const [own, parent] = await Promise.all([stat(dir), stat(path.dirname(dir))]);
    return own.dev !== parent.dev;
  } catch {
    return false;
  }
}

/**
 * Makes (if missing) and mounts (if not mounted) the filesystem of `bytes` at `dir`. Idempotent: a
 * claim is looked at again on every update and resync. The image is formatted under another name
 * and renamed when whole, so a crash during mkfs never leaves a half-made image taken for a volume.
 */
export async function makeFilesystem(dir: string, bytes: number): Promise<void> {
  const image = imageOf(dir);
  await mkdir(dir, { recursive: true });
  if (!existsSync(image)) {
    const partial = `${image}.partial`;
    await writeFile(partial, '');
    // Sparse: the disk holds only what is written. No blocks reserved for root (-m 0): machines run
    // as uid 1000 and would otherwise get 5% less than their size.
    await truncate(partial, bytes);
    await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-i', '16384', '-E', 'nodiscard', partial]);
    await rename(partial, image);
  }
  if (await isMounted(dir)) return;
  await run('mount', ['-o', 'loop,nosuid,nodev', image, dir]);
  // An empty volume, as the directory was: programs that want an empty directory to initialise
  // (initdb) refuse one holding lost+found. e2fsck makes it again if it ever needs it.
  await rmdir(path.join(dir, 'lost+found')).catch(() => undefined);
}

/** Unmounts and deletes a volume's filesystem, image and directory. */
export async function removeFilesystem(dir: string): Promise<void> {
  if (await isMounted(dir)) await run('umount', [dir]);
  await rm(imageOf(dir), { force: true });
  await rm(dir, { recursive: true, force: true });
}

/** Bytes in use on a volume's own filesystem (what `df` inside the machine shows as used). */
export async function usedBytes(dir: string): Promise<number> {
  // Not mounted, statfs would report the node's disk: no figure is better than that one.
  if (!(await isMounted(dir))) throw new Error(`the filesystem of ${dir} is not mounted`);
  const s = await statfs(dir);
  return (s.blocks - s.bfree) * s.bsize;
}
