import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this module that holds the Makefile. */
export const repoRoot: string = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'Makefile')) || !existsSync(path.join(dir, 'crds'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
})();
