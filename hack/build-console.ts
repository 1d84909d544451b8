// Builds the web console (console/, docs/decisions/0031-console.md) into dist/console: esbuild bundles
// console/src/main.tsx with Preact into one minified, content-hashed script and stylesheet, and
// index.html is written naming them (the API serves it uncached and the hashed files for a year).
// Run by `make build` after tsc: node dist/hack/build-console.js [outDir].
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { repoRoot } from '../lib/paths.js';

export async function buildConsole(outDir: string = path.join(repoRoot, 'dist', 'console')): Promise<{ files: string[] }> {
  const source = path.join(repoRoot, 'console');
  // The previous build's files go, so the folder holds one build; only those: tsc writes the console
  // modules the unit tests import into dist/console/src, which the API never serves.
  await mkdir(outDir, { recursive: true });
  for (const name of await readdir(outDir)) {
    if (name === 'index.html' || /^main-[A-Z0-9]+\.(js|css)(\.map)?$/.test(name)) await rm(path.join(outDir, name));
  }
  const result = await esbuild.build({
    entryPoints: { main: path.join(source, 'src', 'main.tsx') },
    bundle: true,
    minify: true,
    sourcemap: 'linked',
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: path.join(source, 'tsconfig.json'),
    entryNames: '[name]-[hash]',
    outdir: outDir,
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
  const js = outputs.find((f) => f.endsWith('.js'));
  const css = outputs.find((f) => f.endsWith('.css'));
  if (!js || !css) throw new Error(`esbuild made no script or no stylesheet: ${outputs.join(', ')}`);
  const template = await readFile(path.join(source, 'index.html'), 'utf8');
  await writeFile(path.join(outDir, 'index.html'), template.replace('{{js}}', js).replace('{{css}}', css));
  return { files: (await readdir(outDir)).filter((f) => f.includes('.')).sort() };
}

/** Where the HTML data client is bundled to: beside ingress-auth/data/client.ts's module, which serves it. */
export const dataClientFile = path.join(repoRoot, 'dist', 'ingress-auth', 'data', 'browser-client.js');

/** The HTML data client (ingress-auth/data/client/main.ts) as one minified script, no module syntax (a plain `<script defer>`). */
export async function buildDataClient(outFile: string = dataClientFile): Promise<number> {
  const result = await esbuild.build({
    entryPoints: [path.join(repoRoot, 'ingress-auth', 'data', 'client', 'main.ts')],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    tsconfig: path.join(repoRoot, 'ingress-auth', 'data', 'client', 'tsconfig.json'),
    outfile: outFile,
    metafile: true,
    logLevel: 'warning',
  });
  return Object.values(result.metafile.outputs)[0]?.bytes ?? 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const { files } = await buildConsole(process.argv[2] ? path.resolve(process.argv[2]) : undefined);
  const clientBytes = await buildDataClient();
  console.log(`console: ${files.join(', ')}; html data client: ${clientBytes} bytes; in ${Date.now() - started} ms`);
}
