// The three declaration forms, read into Declarations: compose `x-svc.auth`/`identity` (and the same
// structure in Markdown front matter), and an HTML page's `<meta name="svc-auth...">` tags.
import { parse as parseHtml } from 'parse5';
import { parseDocument } from 'yaml';
import { descendantsOf, type TreeNode } from '../html/tree.js';
import { AdmitBuilder, emails, flag, PolicyError, patterns, provider, providerWords, type Declaration, type Mode } from './fields.js';

type Map = Record<string, unknown>;
const isMap = (v: unknown): v is Map => typeof v === 'object' && v !== null && !Array.isArray(v);

const identityFields = ['required', 'app-users', 'owner', 'emails', 'idp', 'codehost'];

/**
 * A structured policy (compose `x-svc.auth`, front matter `auth`): a provider word, or a map of
 * identity fields plus `paths`/`except` (auth only). `defaultPaths` apply when no paths are given.
 */
export function structured(value: unknown, ctx: { file: string; field: string; mode: Mode; defaultPaths: string[] }): Declaration {
  const { file, field, mode } = ctx;
  const b = new AdmitBuilder();
  let paths = ctx.defaultPaths;
  let except: string[] = [];
  if (value === false) throw new PolicyError(file, field, '`false` is not a policy (leave it out for a public app)');
  if (value === true)
    throw new PolicyError(file, field, `write a provider word (${providerWords.join(', ')}) or a map of fields, not true`);
  if (value === null || value === undefined) throw new PolicyError(file, field, 'is empty');
  if (typeof value === 'string') {
    b.word(value, file, field);
  } else if (isMap(value)) {
    const known = mode === 'auth' ? [...identityFields, 'paths', 'except'] : identityFields;
    for (const [key, v] of Object.entries(value)) {
      const at = `${field}.${key}`;
      if (key === 'required' || key === 'app-users') b.appUsers = flag(v, file, at);
      else if (key === 'owner') b.owner = flag(v, file, at);
      else if (key === 'emails') emails(v, b, file, at);
      else if (key === 'idp' || key === 'codehost') provider(v, key, b, file, at);
      else if (mode === 'auth' && key === 'paths') paths = patterns(v, file, at);
      else if (mode === 'auth' && key === 'except') except = patterns(v, file, at);
      else if (key === 'paths' || key === 'except')
        throw new PolicyError(
          file,
          at,
          'identity takes no paths or except: it resolves the identity wherever it applies and gates nothing',
        );
      else throw new PolicyError(file, at, `is not a policy field (known: ${known.join(', ')})`);
    }
  } else {
    throw new PolicyError(
      file,
      field,
      `must be a provider word (${providerWords.join(', ')}) or a map of fields, not ${JSON.stringify(value)}`,
    );
  }
  if (b.empty) throw new PolicyError(file, field, `admits nobody: an empty policy (name at least one of ${identityFields.join(', ')})`);
  return { mode, file, field, admit: b.admit(), paths, except };
}

/** The policy keys of one compose `x-svc` map (other keys are compose settings, read elsewhere). */
export function composeDeclarations(xsvc: unknown, file: string, where: string): Declaration[] {
  if (!isMap(xsvc)) return [];
  const out: Declaration[] = [];
  // Compose auth covers every path unless it says otherwise; identity covers every path.
  if ('auth' in xsvc) out.push(structured(xsvc.auth, { file, field: `${where}.auth`, mode: 'auth', defaultPaths: ['/**'] }));
  if ('identity' in xsvc)
    out.push(structured(xsvc.identity, { file, field: `${where}.identity`, mode: 'identity', defaultPaths: ['/**'] }));
  return out;
}

/**
 * A compose file's policy: the top-level `x-svc` is the default for the service; a service-level
 * `x-svc` that declares `auth` or `identity` replaces it (both keys: it is that service's policy).
 * Both are validated, so a mistake in the replaced one is still reported.
 */
export function composePolicy(top: unknown, service: { name: string; xsvc: unknown } | undefined, file = 'compose'): Declaration[] {
  const fromTop = composeDeclarations(top, file, 'x-svc');
  if (!service || !isMap(service.xsvc) || !('auth' in service.xsvc || 'identity' in service.xsvc)) return fromTop;
  return composeDeclarations(service.xsvc, file, `services.${service.name}.x-svc`);
}

// ---- HTML meta tags ----

const metaNames = [
  'svc-auth',
  'svc-identity',
  'svc-auth-owner',
  'svc-auth-app-users',
  'svc-auth-emails',
  'svc-auth-codehost',
  'svc-auth-idp',
  'svc-auth-paths',
  'svc-auth-except',
];

interface HtmlNode extends TreeNode {
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: HtmlNode[];
}

/** The `svc-auth*`/`svc-identity*` meta tags of a page, in document order, as the browser parses it. */
export function policyMetaTags(html: string): Array<{ name: string; content: string | undefined }> {
  // Cheap refusal first: most pages of most trees declare nothing.
  if (!/svc-(auth|identity)/i.test(html)) return [];
  // scriptingEnabled: false parses <noscript> contents as markup, so a tag placed there still counts.
  const doc = parseHtml(html, { scriptingEnabled: false }) as unknown as HtmlNode;
  const found: Array<{ name: string; content: string | undefined }> = [];
  for (const node of descendantsOf(doc)) {
    if (node.nodeName === 'meta' && node.attrs) {
      const name = node.attrs
        .find((a) => a.name === 'name')
        ?.value.trim()
        .toLowerCase();
      if (name && /^svc-(auth|identity)/.test(name)) found.push({ name, content: node.attrs.find((a) => a.name === 'content')?.value });
    }
  }
  return found;
}

/**
 * One HTML page's policy. `svc-auth` (a provider word, or `true`) and the `svc-auth-*` identity properties gate
 * the page's own routes, or `svc-auth-paths` minus `svc-auth-except`; `svc-identity` leaves the page
 * public and takes the same identity properties but no paths.
 */
export function htmlDeclaration(file: string, html: string, routes: string[]): Declaration | undefined {
  const tags = policyMetaTags(html);
  if (!tags.length) return undefined;
  const seen = new Set<string>();
  for (const t of tags) {
    const field = `meta ${t.name}`;
    if (!metaNames.includes(t.name)) throw new PolicyError(file, field, `is not a policy property (known: ${metaNames.join(', ')})`);
    if (seen.has(t.name)) throw new PolicyError(file, field, 'appears more than once (put every value in one tag, comma-separated)');
    seen.add(t.name);
    if (t.content === undefined || !t.content.trim()) throw new PolicyError(file, field, 'has an empty content');
  }
  const get = (name: string) => tags.find((t) => t.name === name)?.content;
  const mode: Mode = seen.has('svc-identity') ? 'identity' : 'auth';
  if (mode === 'identity') {
    if (seen.has('svc-auth'))
      throw new PolicyError(
        file,
        'meta svc-identity',
        'a page is either gated (svc-auth) or public with an optional identity (svc-identity), not both',
      );
    for (const name of ['svc-auth-paths', 'svc-auth-except']) {
      if (seen.has(name)) throw new PolicyError(file, `meta ${name}`, 'svc-identity takes no paths or except');
    }
  }
  const b = new AdmitBuilder();
  const word = get(mode === 'identity' ? 'svc-identity' : 'svc-auth');
  // `true` marks the page gated (or identity-resolving) and leaves who to the svc-auth-* properties,
  // so a page can admit exactly a list of emails (a provider word would add that provider).
  if (word !== undefined && word.trim().toLowerCase() !== 'true')
    b.word(word, file, `meta ${mode === 'identity' ? 'svc-identity' : 'svc-auth'}`);
  if (seen.has('svc-auth-owner')) b.owner = flag(get('svc-auth-owner'), file, 'meta svc-auth-owner');
  if (seen.has('svc-auth-app-users')) b.appUsers = flag(get('svc-auth-app-users'), file, 'meta svc-auth-app-users');
  if (seen.has('svc-auth-emails')) emails(get('svc-auth-emails'), b, file, 'meta svc-auth-emails');
  if (seen.has('svc-auth-idp')) provider(get('svc-auth-idp'), 'idp', b, file, 'meta svc-auth-idp');
  if (seen.has('svc-auth-codehost')) provider(get('svc-auth-codehost'), 'codehost', b, file, 'meta svc-auth-codehost');
  const field = `meta ${tags[0]!.name}`;
  if (b.empty)
    throw new PolicyError(
      file,
      field,
      'admits nobody: an empty policy (add svc-auth with a provider, or svc-auth-owner, -emails, -idp or -codehost)',
    );
  return {
    mode,
    file,
    field: mode === 'identity' ? 'meta svc-identity' : seen.has('svc-auth') ? 'meta svc-auth' : field,
    admit: b.admit(),
    paths: seen.has('svc-auth-paths') ? patterns(get('svc-auth-paths'), file, 'meta svc-auth-paths') : routes,
    except: seen.has('svc-auth-except') ? patterns(get('svc-auth-except'), file, 'meta svc-auth-except') : [],
  };
}

// ---- Markdown front matter ----

// The same front matter runtime/markdown.ts strips and reads (kept equal; a unit test compares them):
// what it renders as front matter must be what we read a policy from.
const frontMatterPattern = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n?(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;
const declaresPolicy = /^(auth|identity|x-svc)[ \t]*:/m;

/**
 * A Markdown page's policy: front matter `auth` and/or `identity` in the compose structure (also
 * accepted under `x-svc`). Without paths, it covers the page's own routes. Other front matter keys
 * (title, ...) are the page's business.
 */
export function markdownDeclarations(file: string, source: string, routes: string[]): Declaration[] {
  const m = frontMatterPattern.exec(source);
  if (!m) return [];
  const doc = parseDocument(m[1]!, { uniqueKeys: true });
  if (doc.errors.length) {
    // The runtime drops malformed front matter; a policy in it must not be dropped silently.
    if (declaresPolicy.test(m[1]!))
      throw new PolicyError(file, 'front matter', `is not valid YAML and declares a policy (${doc.errors[0]!.message.split('\n')[0]})`);
    return [];
  }
  const data: unknown = doc.toJS();
  if (!isMap(data)) return [];
  const xsvc = data['x-svc'];
  if (xsvc !== undefined) {
    if (!isMap(xsvc)) throw new PolicyError(file, 'front matter x-svc', 'must be a map with auth and/or identity');
    for (const key of Object.keys(xsvc)) {
      if (key !== 'auth' && key !== 'identity')
        throw new PolicyError(file, `front matter x-svc.${key}`, 'is not a page setting (a page declares auth and identity)');
      if (key in data) throw new PolicyError(file, `front matter x-svc.${key}`, `is declared twice (also as front matter ${key})`);
    }
  }
  const out: Declaration[] = [];
  for (const mode of ['auth', 'identity'] as const) {
    const [value, field] =
      mode in data
        ? [data[mode], `front matter ${mode}`]
        : isMap(xsvc) && mode in xsvc
          ? [xsvc[mode], `front matter x-svc.${mode}`]
          : [undefined, ''];
    if (field) out.push(structured(value, { file, field, mode, defaultPaths: routes }));
  }
  return out;
}
