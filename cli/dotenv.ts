// The .env files `svc env import` reads: KEY=VALUE lines as docker compose's env_file and the
// dotenv libraries write them. Every bad line is reported with its number, and nothing is sent
// unless all of them are right, so an import never half-applies a file.

/** A variable name the API accepts (api/operations/apps.ts envKey). */
export const envName = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;
export const envNameRule = 'letters, digits and _, not starting with a digit, at most 256';

export interface DotenvResult {
  /** The variables, the last of a repeated name winning. */
  env: Record<string, string>;
  /** Bad lines, `line N: what is wrong`; when any, env must not be used. */
  errors: string[];
  /** Names given more than once (the last one counts), for a notice. */
  repeated: string[];
}

const escapes: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\', $: '$' };

/**
 * Parses a .env text:
 * - blank lines and lines starting with `#` are skipped; `export ` before a name is allowed;
 * - `KEY=value`: the value is trimmed, and a ` #` starts a comment;
 * - `KEY='value'`: taken as written, over several lines if the quote closes on a later one;
 * - `KEY="value"`: the same, with \n, \r, \t, \", \\ and \$ escapes;
 * - `KEY=` is the empty string.
 * No variable expansion: `$OTHER` stays as written (the API stores values, it does not expand them).
 */
export function parseDotenv(text: string): DotenvResult {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const env: Record<string, string> = {};
  const errors: string[] = [];
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const number = i + 1;
    // Only the start is trimmed: a quoted value may end in spaces before it goes on to the next line.
    const line = lines[i]!.trimStart();
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = /^(?:export\s+)?([^=]*?)\s*=\s*(.*)$/.exec(line);
    if (!m) {
      errors.push(`line ${number}: expected KEY=VALUE`);
      continue;
    }
    const name = m[1]!;
    let rest = m[2]!;
    let value: string;
    const quote = rest[0];
    if (quote === '"' || quote === "'") {
      // The value runs to the matching quote, on this line or a later one.
      let body = rest.slice(1);
      let close = closingQuote(body, quote);
      while (close === -1 && i + 1 < lines.length) {
        body += `\n${lines[++i]!}`;
        close = closingQuote(body, quote);
      }
      if (close === -1) {
        errors.push(`line ${number}: the ${quote === '"' ? 'double' : 'single'} quote is never closed`);
        continue;
      }
      const after = body.slice(close + 1).trim();
      if (after !== '' && !after.startsWith('#')) {
        errors.push(`line ${number}: unexpected text after the closing quote: ${after}`);
        continue;
      }
      body = body.slice(0, close);
      value = quote === '"' ? body.replace(/\\(.)/gs, (whole, c: string) => escapes[c] ?? whole) : body;
    } else {
      rest = rest.replace(/(^|\s)#.*$/, '');
      value = rest.trim();
    }
    if (!envName.test(name)) {
      errors.push(`line ${number}: ${name === '' ? 'no name before =' : `"${name}" is not a variable name (${envNameRule})`}`);
      continue;
    }
    if (seen.has(name)) repeated.add(name);
    seen.add(name);
    env[name] = value;
  }
  return { env, errors, repeated: [...repeated] };
}

/** Where the closing quote is: in double quotes a backslash escapes the next character. */
function closingQuote(s: string, quote: string): number {
  for (let i = 0; i < s.length; i++) {
    if (quote === '"' && s[i] === '\\') i++;
    else if (s[i] === quote) return i;
  }
  return -1;
}

/** `K=V` arguments of `svc env set`: the value is everything after the first `=`, as the shell gave it. */
export function parseAssignments(args: string[]): DotenvResult {
  const env: Record<string, string> = {};
  const errors: string[] = [];
  const repeated = new Set<string>();
  for (const arg of args) {
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (eq === -1) errors.push(`${arg}: expected KEY=VALUE`);
    else if (!envName.test(name)) errors.push(`"${name}" is not a variable name (${envNameRule})`);
    else {
      if (name in env) repeated.add(name);
      env[name] = arg.slice(eq + 1);
    }
  }
  return { env, errors, repeated: [...repeated] };
}
