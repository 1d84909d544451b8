// The runtimes sandboxes offer: what the agent inside a sandbox runs code with (eval), and how it
// finds the installed version. GET /runtimes lists the ones the sandbox image really has: the agent
// runs each `version` probe at start, the controllers copy what one pool member found into the
// runtimes ConfigMap, and the API reads that (docs/api/sandboxes.md).

export interface RuntimeDefinition {
  /** The name eval requests use. */
  name: string;
  language: string;
  /** The file extension code is written with before it runs. */
  extension: string;
  /** Other names accepted for it (`python3`, `javascript`). */
  aliases: readonly string[];
  /** The command that runs one file of code: the file's path is appended. */
  run: readonly string[];
  /** The command printing the version; `versionOf` finds the version in its output. */
  version: readonly string[];
}

export const runtimeCatalogue: readonly RuntimeDefinition[] = [
  {
    name: 'python',
    language: 'Python',
    extension: '.py',
    aliases: ['python3', 'py'],
    run: ['python3', '-u'],
    version: ['python3', '--version'],
  },
  {
    name: 'node',
    language: 'JavaScript',
    extension: '.mjs',
    aliases: ['javascript', 'js', 'nodejs'],
    run: ['node'],
    version: ['node', '--version'],
  },
  // Node's own type stripping runs TypeScript with erasable syntax, with no compiler in the image.
  {
    name: 'typescript',
    language: 'TypeScript',
    extension: '.ts',
    aliases: ['ts'],
    run: ['node', '--disable-warning=ExperimentalWarning'],
    version: ['node', '--version'],
  },
  { name: 'bash', language: 'Bash', extension: '.sh', aliases: ['sh', 'shell'], run: ['bash'], version: ['bash', '--version'] },
  { name: 'perl', language: 'Perl', extension: '.pl', aliases: [], run: ['perl'], version: ['perl', '-e', 'print $^V'] },
  { name: 'ruby', language: 'Ruby', extension: '.rb', aliases: ['rb'], run: ['ruby'], version: ['ruby', '--version'] },
  { name: 'php', language: 'PHP', extension: '.php', aliases: [], run: ['php'], version: ['php', '--version'] },
];

/** The runtime a name (or alias) means, if any. */
export function runtimeNamed(name: string): RuntimeDefinition | undefined {
  const n = name.toLowerCase();
  return runtimeCatalogue.find((r) => r.name === n || r.aliases.includes(n));
}

/** The first version number in a probe's output: `Python 3.11.2` → `3.11.2`, `v24.1.0` → `24.1.0`. */
export function versionOf(output: string): string | undefined {
  return /(\d+\.\d+(?:\.\d+)?)/.exec(output)?.[1];
}

/** A runtime as GET /runtimes lists it. */
export interface InstalledRuntime {
  name: string;
  language: string;
  version: string;
  extension: string;
  aliases: string[];
  /** Whether POST /eval runs code in it (every installed runtime does today). */
  eval: boolean;
}

export function installed(def: RuntimeDefinition, version: string): InstalledRuntime {
  return { name: def.name, language: def.language, version, extension: def.extension, aliases: [...def.aliases], eval: true };
}
