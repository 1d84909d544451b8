// Which files of a handler tree answer which URLs: shared by the deployer (which refuses a tree it
// cannot serve, before anything is stored) and the runtime (which serves it). Pure. The rules are
// described at the top of runtime/handlers.ts and in docs/decisions/0007-deploys.md.
import path from 'node:path';

/** Directories whose files are handlers; the first keeps its name in the URL, the second does not. */
export const handlerDirs = ['api', 'handlers'] as const;
export const moduleExts = new Set(['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts']);
/** Languages run as a process per request, and the interpreter that runs them (from PATH). */
export const processInterpreters: Readonly<Record<string, string>> = { '.py': 'python3', '.sh': 'sh' };
/** Languages a handler tree may be written in that the runtime cannot run: refused at deploy. */
const unrunnableExts = new Set(['.rb', '.go', '.php', '.pl', '.lua', '.rs', '.java']);

export type Segment = { kind: 'static'; value: string } | { kind: 'param'; name: string } | { kind: 'rest'; name: string };

export interface HandlerRoute {
  /** The handler's path in the tree (posix). */
  file: string;
  /** The URL pattern, as `/api/users/[id]`. */
  pattern: string;
  segments: Segment[];
  runner: 'module' | 'process';
}

export interface RoutePlan {
  /** Most specific first: the first that matches a path serves it. */
  routes: HandlerRoute[];
  /** Why the tree cannot be served as it is (refused at deploy, logged by the runtime). */
  problems: string[];
}

export const isTypeDeclaration = (p: string) => /\.d\.[mc]?ts$/i.test(p);
const rank = { static: 0, param: 1, rest: 2 } as const;

function compareRoutes(a: HandlerRoute, b: HandlerRoute): number {
  const n = Math.min(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const d = rank[a.segments[i]!.kind] - rank[b.segments[i]!.kind];
    if (d) return d;
  }
  return a.segments.length - b.segments.length || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0);
}

/** The routes of a tree's paths (posix, relative), and what is wrong with them. Pure. */
export function planHandlerRoutes(paths: readonly string[]): RoutePlan {
  const problems: string[] = [];
  const unrunnable: string[] = [];
  const byKey = new Map<string, HandlerRoute>();
  for (const file of [...paths].sort()) {
    const parts = file.split('/');
    const dir = parts[0] as (typeof handlerDirs)[number];
    if (parts.length < 2 || !handlerDirs.includes(dir)) continue;
    if (parts.slice(1).some((s) => s.startsWith('_') || s.startsWith('.'))) continue;
    const ext = path.posix.extname(file).toLowerCase();
    if (unrunnableExts.has(ext)) {
      unrunnable.push(file);
      continue;
    }
    const runner = moduleExts.has(ext) ? 'module' : processInterpreters[ext] ? 'process' : undefined;
    if (!runner || isTypeDeclaration(file)) continue;
    const names = [...parts.slice(dir === 'api' ? 0 : 1, -1), path.posix.basename(parts.at(-1)!, path.posix.extname(file))];
    if (names.at(-1) === 'index') names.pop();
    const segments: Segment[] = [];
    let bad: string | undefined;
    names.forEach((name, i) => {
      const rest = /^\[\.\.\.([A-Za-z_][A-Za-z0-9_]*)\]$/.exec(name);
      const param = /^\[([A-Za-z_][A-Za-z0-9_]*)\]$/.exec(name);
      if (rest) {
        if (i !== names.length - 1) bad = `${file}: [...${rest[1]}] must be the last segment`;
        segments.push({ kind: 'rest', name: rest[1]! });
      } else if (param) segments.push({ kind: 'param', name: param[1]! });
      else if (/[[\]]/.test(name)) bad = `${file}: "${name}" is not a route segment ([name] or [...name])`;
      else segments.push({ kind: 'static', value: name });
    });
    const paramNames = segments.flatMap((s) => (s.kind === 'static' ? [] : [s.name]));
    if (new Set(paramNames).size !== paramNames.length) bad ??= `${file}: a parameter name is used twice`;
    if (bad) {
      problems.push(bad);
      continue;
    }
    const pattern =
      '/' + segments.map((s) => (s.kind === 'static' ? s.value : s.kind === 'param' ? `[${s.name}]` : `[...${s.name}]`)).join('/');
    const key = segments.map((s) => (s.kind === 'static' ? `=${s.value}` : s.kind === 'param' ? '[]' : '[...]')).join('/');
    const taken = byKey.get(key);
    if (taken) {
      problems.push(`${taken.file} and ${file} both serve ${pattern}`);
      continue;
    }
    byKey.set(key, { file, pattern, segments, runner });
  }
  if (unrunnable.length) {
    problems.unshift(
      `handlers in languages the runtime does not run: ${unrunnable.slice(0, 5).join(', ')}${unrunnable.length > 5 ? ` and ${unrunnable.length - 5} more` : ''} ` +
        `(it runs JavaScript and TypeScript modules, and ${Object.keys(processInterpreters).join(' and ')} files as a process per request)`,
    );
  }
  const routes = [...byKey.values()].sort(compareRoutes);
  if (!routes.length && !problems.length)
    problems.push(
      `no handler routes: put modules under ${handlerDirs.map((d) => `${d}/`).join(' or ')} (names starting with _ are not routes)`,
    );
  return { routes, problems };
}

/** The route serving decoded path segments, and its params. */
export function matchRoute(
  routes: readonly HandlerRoute[],
  parts: readonly string[],
): { route: HandlerRoute; params: Record<string, string> } | undefined {
  next: for (const route of routes) {
    const params: Record<string, string> = {};
    const last = route.segments.at(-1);
    if (last?.kind === 'rest' ? parts.length < route.segments.length : parts.length !== route.segments.length) continue;
    for (const [i, s] of route.segments.entries()) {
      if (s.kind === 'static') {
        if (parts[i] !== s.value) continue next;
      } else if (s.kind === 'param') params[s.name] = parts[i]!;
      else params[s.name] = parts.slice(i).join('/');
    }
    return { route, params };
  }
  return undefined;
}
