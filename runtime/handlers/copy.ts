// The runnable copy of a handler tree: the tree stays as the artifact made it, so modules run from a copy in
// a cache directory (JavaScript and JSON copied, TypeScript transpiled, everything else symlinked;
// its package.json says `"type": "module"`), and the routes are planned from the tree's files.
import { copyFile, mkdir, mkdtemp, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../lib/logger.js';
import { isTypeDeclaration, planHandlerRoutes, type HandlerRoute } from '../../lib/handlers/routes.js';
import { reservedPrefix } from '../static-site.js';

const tsOutput: Record<string, string> = { '.ts': '.js', '.mts': '.mjs', '.cts': '.cjs' };

export interface RunnableCopy {
  routes: HandlerRoute[];
  /** Where the runnable files are. */
  cacheDir: string;
  /** Modules that could not be made runnable, and why (each request to them is a 500). */
  broken: Map<string, Error>;
}

/** The file a module runs from in the copy: TypeScript sources under their JavaScript names. */
export function runnablePath(rel: string): string {
  const ext = path.posix.extname(rel);
  const out = tsOutput[ext.toLowerCase()];
  return out ? rel.slice(0, -ext.length) + out : rel;
}

/** Every file and node_modules directory of the tree (posix, relative), platform names left out. */
async function walk(base: string, rel = ''): Promise<{ files: string[]; packages: string[] }> {
  const out = { files: [] as string[], packages: [] as string[] };
  for (const entry of await readdir(path.join(base, rel), { withFileTypes: true })) {
    if (entry.name.startsWith(reservedPrefix)) continue;
    const p = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules') out.packages.push(p);
      else {
        const sub = await walk(base, p);
        out.files.push(...sub.files);
        out.packages.push(...sub.packages);
      }
    } else if (entry.isFile()) out.files.push(p);
  }
  return out;
}

export async function prepareRunnableCopy(base: string, cacheDirOption: string | undefined, log: Logger): Promise<RunnableCopy> {
  const broken = new Map<string, Error>();
  let cacheDir = cacheDirOption;
  const { files, packages } = await walk(base);
  const plan = planHandlerRoutes(files);
  const routes = plan.routes;
  for (const problem of plan.problems) log.warn({ problem }, 'Handler tree problem');
  cacheDir ??= await mkdtemp(path.join(tmpdir(), 'svc-handlers-'));
  const dest = cacheDir;
  const present = new Set(files);
  const tsFiles = files.filter((f) => tsOutput[path.posix.extname(f).toLowerCase()] && !isTypeDeclaration(f));
  let ts: typeof import('typescript') | undefined;
  if (tsFiles.length) {
    try {
      ts = ((await import('typescript')) as unknown as { default: typeof import('typescript') }).default;
    } catch (err) {
      const missing = new Error(`TypeScript modules need the typescript package in the runtime: ${(err as Error).message}`);
      for (const f of tsFiles) broken.set(f, missing);
    }
  }
  for (const dir of new Set(files.map((f) => path.posix.dirname(f)))) await mkdir(path.join(dest, dir), { recursive: true });
  for (const p of packages) {
    await mkdir(path.join(dest, path.posix.dirname(p)), { recursive: true });
    await symlink(path.join(base, p), path.join(dest, p), 'dir');
  }
  let pkg: Record<string, unknown> = {};
  if (present.has('package.json')) {
    try {
      pkg = JSON.parse(await readFile(path.join(base, 'package.json'), 'utf8')) as Record<string, unknown>;
    } catch (err) {
      log.warn({ err }, 'The tree’s package.json is not JSON; modules run without it');
    }
  }
  await writeFile(path.join(dest, 'package.json'), JSON.stringify({ ...pkg, type: 'module' }));
  for (const file of files) {
    if (file === 'package.json') continue;
    const ext = path.posix.extname(file).toLowerCase();
    const from = path.join(base, file);
    if (tsOutput[ext] && !isTypeDeclaration(file) && ts) {
      const out = runnablePath(file);
      // A JavaScript file of the same name is taken to be this module compiled: it runs as it is.
      if (present.has(out)) continue;
      const result = ts.transpileModule(await readFile(from, 'utf8'), {
        fileName: file,
        reportDiagnostics: true,
        compilerOptions: {
          module: ext === '.cts' ? ts.ModuleKind.CommonJS : ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2022,
          rewriteRelativeImportExtensions: true,
          inlineSourceMap: true,
          inlineSources: false,
        },
      });
      const errors = (result.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
      if (errors.length) {
        broken.set(file, new SyntaxError(`${file}: ${errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`));
        continue;
      }
      await writeFile(path.join(dest, out), result.outputText);
    } else if (['.js', '.mjs', '.cjs', '.json'].includes(ext)) {
      await copyFile(from, path.join(dest, file));
    } else {
      await symlink(from, path.join(dest, file));
    }
  }
  log.info({ routes: routes.map((r) => `${r.pattern} ← ${r.file}`), cacheDir: dest }, 'Handler routes');
  return { routes, cacheDir: dest, broken };
}
