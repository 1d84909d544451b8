// A directory on disk as the build plan sees a tree (lib/builds/plan.ts): its file paths, and the
// text of the small files that decide. Dependency and VCS directories are not walked: they say
// nothing about what the tree is, and a checked-in node_modules can hold a hundred thousand files.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { SourceTree } from './plan.js';

const skipped = new Set(['.git', 'node_modules', '.python', '__pycache__', '.venv']);
/** Files larger than this are listed but not read (what decides is a manifest of a few KB). */
const readLimit = 1024 * 1024;
/** The walk stops listing after this many files; the plan needs only the first levels. */
const listLimit = 20_000;

export function treeOnDisk(root: string): SourceTree {
  const paths: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (paths.length >= listLimit) return;
      // `.svc-*`: the platform's own files (the fetched artifact's marker), not the tenant's.
      if (skipped.has(entry.name) || entry.name.startsWith('.svc-')) continue;
      const p = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), p);
      else if (entry.isFile()) paths.push(p);
    }
  };
  walk(root, '');
  paths.sort();
  return {
    paths,
    read: (p) => {
      const file = path.join(root, p);
      // Only what the walk listed: a plan never follows a path out of the tree.
      if (!paths.includes(p)) return undefined;
      try {
        return statSync(file).size <= readLimit ? readFileSync(file, 'utf8') : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
