// `svc env ls|set|unset|import`: an app's environment variables (GET, PATCH, PUT
// /apps/{appID}/env, DELETE /apps/{appID}/env/{key}). Every change is one request, so it applies
// whole or not at all; the app's machines restart with the new environment.
import { body, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, readInput, show, type CommandGroup } from './command.js';
import { shellWord } from './domains.js';
import { envName, envNameRule, parseAssignments, parseDotenv, type DotenvResult } from './dotenv.js';
import { table } from './table.js';

type EnvAnswer = paths['/apps/{appID}/env']['get']['responses'][200]['content']['application/json'];
type MergeBody = NonNullable<paths['/apps/{appID}/env']['patch']['requestBody']>['content']['application/json'];
/** A variable the platform gives the machines besides the app's own (an attached database's), as every env answer has it. */
type ProvidedVar = Pick<EnvAnswer['provided'][number], 'name' | 'source' | 'masked' | 'overrides'>;

const usage = `usage:
  svc env ls APP [--json]                      the app's variables, and the ones the platform gives
                                               its machines besides (an attached database's, their
                                               values hidden)
  svc env set APP KEY=VALUE [KEY=VALUE ...]    set variables, keeping the others
  svc env unset APP KEY [KEY ...]              remove variables
  svc env import APP FILE|- [--replace]        set the variables of a .env file (- reads standard
                                               input); --replace: the file becomes the whole set
The machines restart with the new environment. A change is one request: all of it or nothing.
A .env file has KEY=VALUE lines; # comments, 'single' and "double" quotes (\\n escapes,
several lines), and an "export " prefix are understood; a bad line stops the import.
example:
  svc env set shop LOG_LEVEL=debug 'GREETING=hello world' && svc env import shop .env.production`;

/** What ls shows for a value the API masks (credentials: it never sends them). */
export const hidden = '********';

/** A value on one line of a table: as it is, or JSON-quoted when it has line breaks, control characters or edge spaces. */
const cell = (v: string) => (/[\u0000-\u001f\u007f]|^\s|\s$/.test(v) || v === '' ? JSON.stringify(v) : v);

const sourceOf = (p: ProvidedVar) => `${p.source.kind} ${p.source.name}`;

/**
 * `svc env ls`: the app's own variables by name, then what the platform provides (masked), with
 * where each comes from; an own variable a provided one overrides says so, since the machines do
 * not get it.
 */
export function envTable(app: string, answer: { env: Record<string, string>; provided: ProvidedVar[] }): string[] {
  const keys = Object.keys(answer.env).sort();
  if (keys.length === 0 && answer.provided.length === 0)
    return [`app ${app} has no variables; set some: svc env set ${shellWord(app)} KEY=VALUE`];
  const overriding = new Map(answer.provided.filter((p) => p.overrides).map((p) => [p.name, p]));
  return table([
    ['KEY', 'VALUE', 'SOURCE'],
    ...keys.map((k) => {
      const by = overriding.get(k);
      return [k, cell(answer.env[k]!), by ? `app (not used: ${sourceOf(by)} sets it)` : 'app'];
    }),
    ...answer.provided.map((p) => [p.name, p.masked ? hidden : '-', sourceOf(p)]),
  ]);
}

/**
 * Stops before a request when the input has bad lines, naming every one: bad arguments are a
 * usage error (exit 2), a bad file is not (exit 1, without the usage in the way of its lines).
 */
function refuseBad(parsed: DotenvResult, what: string, from: 'arguments' | 'file'): void {
  if (parsed.errors.length === 0) return;
  const message = `${what}, nothing was changed:\n  ${parsed.errors.join('\n  ')}`;
  throw from === 'arguments' ? new GroupUsageError(message, usage) : new Error(message);
}

export const envGroup: CommandGroup = {
  name: 'env',
  synopsis: `  svc env ls APP | set APP K=V ... | unset APP K ... | import APP FILE|- [--replace]
                                              an app's environment variables; a .env file in one
                                              request (a bad line changes nothing)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      replace: { type: 'boolean' },
    });
    const [command, app, ...rest] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    if (!['ls', 'set', 'unset', 'import'].includes(command)) throw new GroupUsageError(`unknown env command: ${command}`, usage);
    const json = values.json === true;
    if (!app) throw new GroupUsageError(`svc env ${command} APP ...`, usage);
    const api = () => connect(ctx, values.token);
    const path = { params: { path: { appID: app } } };
    const printAfter = <T>(answer: T, said: string) => show(ctx, json, answer, () => [said]);
    const noteRepeated = (parsed: DotenvResult) => {
      if (parsed.repeated.length) ctx.err(`svc: given more than once, the last one counts: ${parsed.repeated.join(', ')}`);
    };
    switch (command) {
      case 'ls': {
        show(ctx, json, await body(api().GET('/apps/{appID}/env', path)), (a) => envTable(app, a));
        return 0;
      }
      case 'set': {
        if (rest.length === 0) throw new GroupUsageError('svc env set APP KEY=VALUE [KEY=VALUE ...]', usage);
        const parsed = parseAssignments(rest);
        refuseBad(parsed, 'bad variables', 'arguments');
        noteRepeated(parsed);
        const answer = await body(api().PATCH('/apps/{appID}/env', { ...path, body: parsed.env }));
        printAfter(answer, `set ${Object.keys(parsed.env).join(', ')} on ${app}; its machines restart with them`);
        return 0;
      }
      case 'unset': {
        if (rest.length === 0) throw new GroupUsageError('svc env unset APP KEY [KEY ...]', usage);
        const bad = rest.filter((k) => !envName.test(k));
        if (bad.length) throw new GroupUsageError(`not variable names (${envNameRule}): ${bad.join(', ')}`, usage);
        const keys = [...new Set(rest)];
        if (keys.length === 1) {
          // One variable: DELETE, which says when the app has no such variable.
          await api().DELETE('/apps/{appID}/env/{key}', { params: { path: { appID: app, key: keys[0]! } } });
          if (!json) ctx.out(`removed ${keys[0]} from ${app}; its machines restart without it`);
          return 0;
        }
        // Several: one PATCH with nulls, so they go together or not at all.
        const removal: MergeBody = Object.fromEntries(keys.map((k) => [k, null]));
        const answer = await body(api().PATCH('/apps/{appID}/env', { ...path, body: removal }));
        printAfter(answer, `removed ${keys.join(', ')} from ${app}; its machines restart without them`);
        return 0;
      }
      case 'import': {
        const [file, extra] = rest;
        if (!file || extra !== undefined) throw new GroupUsageError('svc env import APP FILE|- [--replace]', usage);
        const parsed = parseDotenv(await readInput(ctx, file));
        refuseBad(parsed, `${file === '-' ? 'standard input' : file} has bad lines`, 'file');
        noteRepeated(parsed);
        const count = Object.keys(parsed.env).length;
        // An empty file is more often a mistake than a wish to remove everything (--replace would).
        if (count === 0) throw new GroupUsageError(`${file === '-' ? 'standard input' : file} sets no variables`, usage);
        const answer = values.replace
          ? await body(api().PUT('/apps/{appID}/env', { ...path, body: parsed.env }))
          : await body(api().PATCH('/apps/{appID}/env', { ...path, body: parsed.env }));
        const said = values.replace
          ? `replaced the environment of ${app} with ${count} variables; its machines restart with them`
          : `set ${count} variables on ${app} (${Object.keys(parsed.env).join(', ')}); its machines restart with them`;
        printAfter(answer, said);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown env command: ${command}`, usage);
    }
  },
};
