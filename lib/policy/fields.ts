// The policy fields every declaration form shares (compose x-svc, HTML meta tags, Markdown front
// matter): provider words, `required`/`app-users`, `owner`, `emails`, `idp`, `codehost`, `paths`
// and `except`. Each form reads its own syntax into raw values and hands them here, so the rules
// (what is a valid identity or pattern, how lists are normalized, what is refused) are written once.
import type { App } from '../resources/index.js';

export type AuthPolicy = NonNullable<App['spec']['auth']>;
export type AuthRule = AuthPolicy['rules'][number];
export type Admit = AuthRule['admit'];
export type Mode = AuthRule['mode'];

/** A refused declaration; the message names the file and the field, for the deploy's 400. */
export class PolicyError extends Error {
  override name = 'PolicyError';
  constructor(
    readonly file: string,
    readonly field: string,
    detail: string,
  ) {
    super(`${file}: ${field}: ${detail}`);
  }
}

/** One declaration (a compose auth/identity, one page's meta tags, one front matter key), parsed. */
export interface Declaration {
  mode: Mode;
  file: string;
  /** How the declaration is spelled in its file, for messages: `x-svc.auth`, `meta svc-auth`, `front matter auth`. */
  field: string;
  admit: Admit;
  paths: string[];
  except: string[];
}

// Limits of the App CRD (crds/apps.svc.dev.yaml), checked here so a deploy is refused with a
// message before anything is stored, rather than by the API server after the deploy is recorded.
export const limits = { rules: 256, paths: 256, values: 1000, pathLength: 1024, emailLength: 254, loginLength: 100 };

/** Provider words: the shorthand for a whole policy (compose/front matter `auth: idp`, `<meta name="svc-auth" content="idp">`). */
export const providerWords = ['required', 'app-users', 'owner', 'idp', 'codehost'] as const;

/** The identities a declaration admits, while it is being read; `admit()` gives the CRD shape. */
export class AdmitBuilder {
  appUsers = false;
  owner = false;
  readonly emails = new Set<string>();
  idpAny = false;
  readonly idp = new Set<string>();
  codehostAny = false;
  readonly codehost = new Set<string>();

  word(raw: string, file: string, field: string): void {
    const word = raw.trim().toLowerCase();
    if (!word) throw new PolicyError(file, field, 'is empty');
    if (word === 'false') throw new PolicyError(file, field, '`false` is not a policy (leave the declaration out for a public page)');
    if (word === 'required' || word === 'app-users') this.appUsers = true;
    else if (word === 'owner') this.owner = true;
    else if (word === 'idp') this.idpAny = true;
    else if (word === 'codehost') this.codehostAny = true;
    else throw new PolicyError(file, field, `${JSON.stringify(raw)} is not a provider (one of ${providerWords.join(', ')})`);
  }

  get empty(): boolean {
    return !this.appUsers && !this.owner && !this.emails.size && !this.idpAny && !this.idp.size && !this.codehostAny && !this.codehost.size;
  }

  admit(): Admit {
    const sorted = (s: Set<string>) => [...s].sort();
    return {
      ...(this.appUsers ? { appUsers: true } : {}),
      ...(this.owner ? { owner: true } : {}),
      ...(this.emails.size ? { emails: sorted(this.emails) } : {}),
      // `true` admits any identity of the provider, so listed values would add nothing.
      ...(this.idpAny ? { idp: { any: true } } : this.idp.size ? { idp: { values: sorted(this.idp) } } : {}),
      ...(this.codehostAny ? { codehost: { any: true } } : this.codehost.size ? { codehost: { values: sorted(this.codehost) } } : {}),
    };
  }
}

const isTrue = (v: unknown) => v === true || (typeof v === 'string' && v.trim().toLowerCase() === 'true');
const isFalse = (v: unknown) => v === false || (typeof v === 'string' && v.trim().toLowerCase() === 'false');
const isEmpty = (v: unknown) => v === null || v === undefined || (typeof v === 'string' && !v.trim()) || (Array.isArray(v) && !v.length);

/** A field whose only value is `true` (`owner`, `required`, `app-users`). */
export function flag(v: unknown, file: string, field: string): true {
  if (isEmpty(v)) throw new PolicyError(file, field, 'is empty (write true)');
  if (isFalse(v)) throw new PolicyError(file, field, '`false` is not accepted (leave the field out)');
  if (!isTrue(v)) throw new PolicyError(file, field, `must be true, not ${JSON.stringify(v)}`);
  return true;
}

/**
 * The items of a list field: a YAML list, or a comma-separated string (the meta-tag form, accepted
 * everywhere). Items are trimmed; an empty item ("a,,b", a trailing comma) is refused, not skipped.
 */
export function items(v: unknown, file: string, field: string, max: number): Array<{ value: string; field: string }> {
  if (isEmpty(v)) throw new PolicyError(file, field, 'is empty');
  if (isFalse(v)) throw new PolicyError(file, field, '`false` is not accepted (leave the field out)');
  let out: Array<{ value: string; field: string }>;
  if (Array.isArray(v)) {
    out = v.map((item, i) => {
      const at = `${field}[${i}]`;
      if (typeof item !== 'string' && typeof item !== 'number')
        throw new PolicyError(file, at, `must be a string, not ${JSON.stringify(item)}`);
      const value = String(item).trim();
      if (!value) throw new PolicyError(file, at, 'is empty');
      return { value, field: at };
    });
  } else if (typeof v === 'string') {
    out = v.split(',').map((part) => {
      const value = part.trim();
      if (!value) throw new PolicyError(file, field, `has an empty item in ${JSON.stringify(v)}`);
      return { value, field };
    });
  } else {
    throw new PolicyError(file, field, `must be a list or a comma-separated string, not ${JSON.stringify(v)}`);
  }
  if (out.length > max) throw new PolicyError(file, field, `has ${out.length} items (at most ${max})`);
  return out;
}

// Hostname labels; a hosted domain has at least two labels and an alphabetic top-level one.
const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const domainPattern = new RegExp(`^(?:${label}\\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$`);
// The dot-atom local part of RFC 5322 (no quoted strings, no comments): what providers verify.
const localPattern = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const loginPattern = /^[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?$/;

function domain(value: string, file: string, field: string): string {
  if (value.startsWith('*'))
    throw new PolicyError(
      file,
      field,
      `${JSON.stringify(value)}: wildcards are not accepted; an email suffix is not sufficient to admit (name the hosted domain the provider signs)`,
    );
  if (value.length > 253 || !domainPattern.test(value)) throw new PolicyError(file, field, `${JSON.stringify(value)} is not a domain`);
  return value;
}

/** A verified mailbox, lowercased. */
export function mailbox(raw: string, file: string, field: string): string {
  const value = raw.toLowerCase();
  const at = value.lastIndexOf('@');
  if (at === 0)
    throw new PolicyError(
      file,
      field,
      `${JSON.stringify(raw)} is a domain, not an address: emails admits exact mailboxes (a hosted domain goes in idp)`,
    );
  if (value.startsWith('*'))
    throw new PolicyError(file, field, `${JSON.stringify(raw)}: wildcards are not accepted; an email suffix is not sufficient to admit`);
  if (at < 0 || value.length > limits.emailLength || !localPattern.test(value.slice(0, at)) || value.slice(0, at).length > 64) {
    throw new PolicyError(file, field, `${JSON.stringify(raw)} is not an email address`);
  }
  if (!domainPattern.test(value.slice(at + 1)))
    throw new PolicyError(file, field, `${JSON.stringify(raw)} is not an email address (its domain is not valid)`);
  return value;
}

/** An idp value: a mailbox is an account, a bare domain (or the legacy `@domain`) a hosted domain. */
export function idpValue(raw: string, file: string, field: string): string {
  const value = raw.toLowerCase();
  if (value.startsWith('@')) return domain(value.slice(1), file, field);
  if (value.includes('@')) return mailbox(value, file, field);
  return domain(value, file, field);
}

/** A code-hosting login or organization name, lowercased. */
export function codehostValue(raw: string, file: string, field: string): string {
  const value = raw.toLowerCase();
  if (value.startsWith('@')) throw new PolicyError(file, field, `${JSON.stringify(raw)}: write the login or organization without the @`);
  if (value.includes('/'))
    throw new PolicyError(file, field, `${JSON.stringify(raw)}: teams and repositories are not accepted, only a login or an organization`);
  if (value.length > limits.loginLength || !loginPattern.test(value))
    throw new PolicyError(file, field, `${JSON.stringify(raw)} is not a login or organization name`);
  return value;
}

const paramSegment = /^\[(\.\.\.)?[A-Za-z_][A-Za-z0-9_]*\]$/;

/**
 * A path pattern: an exact path (`/about`), a parameterized page route (`/posts/[id]`, a last
 * `[...rest]`), `/**`, or `/prefix/**`. Written decoded, as the runtime resolves paths: no `%`,
 * query, fragment, dot segments or empty segments. Case is kept (paths are case-sensitive).
 */
export function pathPattern(raw: string, file: string, field: string): string {
  const value = raw.trim();
  const bad = (why: string) => new PolicyError(file, field, `${JSON.stringify(raw)} ${why}`);
  if (!value.startsWith('/')) throw bad('must start with /');
  if (value.length > limits.pathLength) throw bad(`is longer than ${limits.pathLength} characters`);
  if (/[\s\u0000-\u001f\u007f?#%\\]/.test(value))
    throw bad('is not a path pattern (no spaces, ?, #, % or \\: write the path decoded, without a query)');
  const segments = value.slice(1).split('/');
  segments.forEach((seg, i) => {
    const last = i === segments.length - 1;
    if (seg === '' && !last) throw bad('has an empty segment (//)');
    if (seg === '.' || seg === '..') throw bad('has a dot segment');
    if (seg === '**') {
      if (!last) throw bad('may use ** only as its last segment (/** or /prefix/**)');
      return;
    }
    if (seg.includes('*')) throw bad('may use a wildcard only as a last /** segment');
    if (/[[\]]/.test(seg)) {
      if (!paramSegment.test(seg)) throw bad(`has a malformed route segment ${JSON.stringify(seg)} ([name] or a last [...name])`);
      if (seg.startsWith('[...') && !last) throw bad(`may use ${seg} only as its last segment`);
    }
  });
  return value;
}

/** Trimmed, validated and deduplicated patterns, in the order declared. */
export function patterns(v: unknown, file: string, field: string): string[] {
  // In the string (meta-tag) form, paths may be separated by whitespace as well as commas.
  const list = items(v, file, field, limits.paths).flatMap((i) =>
    typeof v === 'string' ? i.value.split(/\s+/).map((value) => ({ value, field: i.field })) : [i],
  );
  if (list.length > limits.paths) throw new PolicyError(file, field, `has ${list.length} paths (at most ${limits.paths})`);
  return [...new Set(list.map((i) => pathPattern(i.value, file, i.field)))];
}

/** `true` (any identity of the provider) or a list of values, added to the builder. */
export function provider(v: unknown, which: 'idp' | 'codehost', b: AdmitBuilder, file: string, field: string): void {
  if (isFalse(v)) throw new PolicyError(file, field, '`false` is not accepted (leave the field out)');
  if (isTrue(v)) {
    if (which === 'idp') b.idpAny = true;
    else b.codehostAny = true;
    return;
  }
  for (const item of items(v, file, field, limits.values)) {
    if (which === 'idp') b.idp.add(idpValue(item.value, file, item.field));
    else b.codehost.add(codehostValue(item.value, file, item.field));
  }
  if ((which === 'idp' ? b.idp : b.codehost).size > limits.values)
    throw new PolicyError(file, field, `has more than ${limits.values} values`);
}

export function emails(v: unknown, b: AdmitBuilder, file: string, field: string): void {
  if (isTrue(v)) throw new PolicyError(file, field, 'takes addresses, not true (`required` admits every app user)');
  for (const item of items(v, file, field, limits.values)) b.emails.add(mailbox(item.value, file, item.field));
  if (b.emails.size > limits.values) throw new PolicyError(file, field, `has more than ${limits.values} addresses`);
}

/** Admits in a canonical form, so two declarations compare by what they admit. */
export function admitKey(a: Admit): string {
  return JSON.stringify([
    a.appUsers ?? false,
    a.owner ?? false,
    [...(a.emails ?? [])].sort(),
    a.idp?.any ?? false,
    [...(a.idp?.values ?? [])].sort(),
    a.codehost?.any ?? false,
    [...(a.codehost?.values ?? [])].sort(),
  ]);
}

/** What an admit lets in, for people: "owner; emails a@x.com; idp any". */
export function describeAdmit(a: Admit): string {
  const parts: string[] = [];
  if (a.appUsers) parts.push('app users');
  if (a.owner) parts.push('owner');
  if (a.emails?.length) parts.push(`emails ${a.emails.join(', ')}`);
  if (a.idp) parts.push(a.idp.any ? 'idp any' : `idp ${(a.idp.values ?? []).join(', ')}`);
  if (a.codehost) parts.push(a.codehost.any ? 'codehost any' : `codehost ${(a.codehost.values ?? []).join(', ')}`);
  return parts.join('; ') || 'nobody';
}
