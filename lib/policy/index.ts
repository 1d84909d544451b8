// Authentication policies for deployed apps: the one parser for every declaration form (compose
// `x-svc`, HTML meta tags, Markdown front matter) and the one matcher of paths against the result.
// A deploy turns its declarations into the App's `spec.auth` (the CRD's shape), which ingress-auth
// enforces; an App applied with kubectl carries the same shape. See docs/decisions/0009-policies.md.
import { composePolicy, htmlDeclaration, markdownDeclarations } from './declarations.js';
import { admitKey, describeAdmit, limits, PolicyError, type AuthPolicy, type Declaration } from './fields.js';
import { isHtmlPage, isMarkdownPage, pageRoutes, type TreeKind } from './routes.js';
import type { App } from '../resources/index.js';

export { composePolicy, htmlDeclaration, markdownDeclarations, policyMetaTags, structured } from './declarations.js';
export { admitKey, describeAdmit, PolicyError, type Admit, type AuthPolicy, type AuthRule, type Declaration, type Mode } from './fields.js';
export { decide, matchesPattern, normalizeRequestPath, type Decision } from './match.js';
export { isHtmlPage, isMarkdownPage, pageRoutes, type TreeKind } from './routes.js';

/** The declarations of a tree's pages (HTML meta tags, Markdown front matter), in path order. */
export function treeDeclarations(kind: TreeKind, files: readonly string[], pages: ReadonlyMap<string, Buffer>): Declaration[] {
  const all = new Set(files);
  const out: Declaration[] = [];
  for (const file of [...pages.keys()].sort()) {
    const text = pages.get(file)!.toString('utf8');
    if (isHtmlPage(file)) {
      const d = htmlDeclaration(file, text, pageRoutes(file, kind, all));
      if (d) out.push(d);
    } else if (isMarkdownPage(file)) {
      out.push(...markdownDeclarations(file, text, pageRoutes(file, kind, all)));
    }
  }
  return out;
}

/**
 * One app's policy from all its declarations, or undefined when there are none (a public app).
 * Every declaration must admit the same identities (the spec's rule: one app, one audience); which
 * paths each gates or merely resolves identity on may differ.
 */
export function combine(declarations: readonly Declaration[]): AuthPolicy | undefined {
  const first = declarations[0];
  if (!first) return undefined;
  const key = admitKey(first.admit);
  for (const d of declarations.slice(1)) {
    if (admitKey(d.admit) !== key) {
      throw new PolicyError(
        d.file,
        d.field,
        `admits ${describeAdmit(d.admit)}, but ${first.file} (${first.field}) admits ${describeAdmit(first.admit)}: all declarations in one app must admit the same identities`,
      );
    }
  }
  if (declarations.length > limits.rules) {
    const extra = declarations[limits.rules]!;
    throw new PolicyError(
      extra.file,
      extra.field,
      `is declaration ${declarations.length} of the app; at most ${limits.rules} (declare paths in one compose x-svc.auth instead)`,
    );
  }
  return {
    rules: declarations.map((d) => ({
      mode: d.mode,
      source: d.file,
      paths: d.paths as [string, ...string[]],
      ...(d.except.length ? { except: d.except } : {}),
      admit: d.admit,
    })),
  };
}

/** A compose file's policy alone (a container service), or undefined when it declares none. */
export function composeAuth(top: unknown, service: { name: string; xsvc: unknown } | undefined, file = 'compose'): AuthPolicy | undefined {
  return combine(composePolicy(top, service, file));
}

/**
 * The policies in force on an App's hostname: the App's as applied, and while a rollout has not
 * settled (in progress, or failed and the last live revision serving), also the policy that
 * revision was deployed with: the pages served are that revision's, and a deploy that drops or
 * loosens a policy must not expose them before (or unless) it serves. ingress-auth enforces these;
 * the App controller reports the addresses they list (status.policyEmails).
 */
export function policiesInForce(app: Pick<App, 'spec' | 'status'>): AuthPolicy[] {
  const { rollout, live } = app.status ?? {};
  const unsettled = live !== undefined && !(rollout?.state === 'Live' && rollout.revision === live.revision);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- the generated type of status.live.spec is {} (the CRD keeps it schemaless); the rule takes {} for the same type
  const policies = [app.spec.auth, unsettled ? (live.spec as { auth?: AuthPolicy } | undefined)?.auth : undefined];
  return policies.filter((p): p is AuthPolicy => p !== undefined && p.rules.length > 0);
}
