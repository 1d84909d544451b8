// What a pasted .env would do to an app's own variables, before anything is sent. The text is
// parsed by the CLI's own parser (cli/dotenv.ts: no Node import, so the browser runs the very rules
// `svc env import` does), and compared with the variables the app has now. Pure: unit-tested.
import { parseDotenv } from '../../cli/dotenv.js';
import type { AppEnv, EnvPatch } from './api.js';

export interface EnvChange {
  name: string;
  kind: 'added' | 'changed' | 'unchanged';
  /** A provided variable of this name wins on the machines: the app's own one is not used there. */
  overridden: boolean;
}

export interface PastePreview {
  /** Bad lines, `line N: what is wrong`: while there is one, nothing may be sent. */
  errors: string[];
  /** Every variable of the text, in the order written (a repeated name once, where it is last). */
  changes: EnvChange[];
  /** Names given more than once: the last one counts. */
  repeated: string[];
  /** The one PATCH to send: the added and changed variables only. Empty when there are errors. */
  patch: EnvPatch;
}

export function previewPaste(text: string, current: AppEnv): PastePreview {
  const parsed = parseDotenv(text);
  const overridden = new Set(current.provided.map((p) => p.name));
  const changes: EnvChange[] = Object.entries(parsed.env).map(([name, value]) => ({
    name,
    kind: !Object.hasOwn(current.env, name) ? 'added' : current.env[name] === value ? 'unchanged' : 'changed',
    overridden: overridden.has(name),
  }));
  const patch: EnvPatch = {};
  if (parsed.errors.length === 0) for (const c of changes) if (c.kind !== 'unchanged') patch[c.name] = parsed.env[c.name]!;
  return { errors: parsed.errors, changes, repeated: parsed.repeated, patch };
}

/** The app's own variables by name, each marked when a provided one of the same name wins on the machines. */
export function ownVariables(current: AppEnv): Array<{ name: string; value: string; overriddenBy: string | undefined }> {
  return Object.keys(current.env)
    .sort()
    .map((name) => {
      const provider = current.provided.find((p) => p.name === name);
      return { name, value: current.env[name]!, overriddenBy: provider ? sourceInWords(provider.source) : undefined };
    });
}

/** Where a provided variable comes from, in words; a kind this console does not know yet is shown as it is. */
export function sourceInWords(source: { kind: string; name: string }): string {
  return source.kind === 'database' ? `database ${source.name}` : `${source.kind} ${source.name}`;
}
