// The bytes a directory volume's files take on disk, as `du -s` counts them: allocated blocks (a
// sparse file counts what it holds, not its length), each inode once however many links it has,
// the directories themselves included. Files that vanish during the walk (PostgreSQL's temporary
// files) are skipped: the figure is of a moment, and the next walk is another.
import { lstat, opendir } from 'node:fs/promises';
import path from 'node:path';

function gone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export async function diskUsage(root: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const visit = async (p: string): Promise<void> => {
    let st;
    try {
      st = await lstat(p, { bigint: true });
    } catch (err) {
      if (gone(err)) return;
      throw err;
    }
    const inode = `${st.dev}:${st.ino}`;
    if (seen.has(inode)) return;
    seen.add(inode);
    total += Number(st.blocks) * 512;
    if (!st.isDirectory()) return;
    let dir;
    try {
      dir = await opendir(p);
    } catch (err) {
      if (gone(err)) return;
      throw err;
    }
    for await (const entry of dir) await visit(path.join(p, entry.name));
  };
  await visit(root);
  return total;
}
