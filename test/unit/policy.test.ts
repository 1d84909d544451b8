// The authentication policy parser (lib/policy): every row of the spec's policy tables and every
// numbered rule about declaring policies, each with a case it accepts and a case it refuses; the
// three declaration forms; page routes; and the path matcher ingress-auth enforces with.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  combine,
  composePolicy,
  decide,
  htmlDeclaration,
  markdownDeclarations,
  matchesPattern,
  normalizeRequestPath,
  pageRoutes,
  PolicyError,
  treeDeclarations,
  type Admit,
  type AuthPolicy,
} from '../../lib/policy/index.js';
import { splitFrontMatter } from '../../runtime/markdown.js';
import { parse as parseYaml } from 'yaml';

/** The policy of a compose file's top-level x-svc, written as YAML. */
const compose = (yaml: string): AuthPolicy | undefined => combine(composePolicy(parseYaml(yaml), undefined));
const admitOf = (yaml: string): Admit => compose(`auth:\n${yaml.replace(/^/gm, '  ')}`)!.rules[0]!.admit;
const page = (metas: string, file = 'docs/page.html') =>
  htmlDeclaration(file, `<!doctype html><html><head>${metas}</head><body>hi</body></html>`, [`/${file}`]);
const refused = (fn: () => unknown, pattern: RegExp, where?: { file?: string; field?: string | RegExp }) =>
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof PolicyError, `not a PolicyError: ${String(err)}`);
    assert.match(err.message, pattern);
    if (where?.file) assert.equal(err.file, where.file);
    if (where?.field)
      assert.match(err.field, typeof where.field === 'string' ? new RegExp(`^${where.field.replace(/[.[\]]/g, '\\$&')}$`) : where.field);
    return true;
  });

describe('policy table: fields and the identities they admit', () => {
  it('`required` or `app-users: true`: active app users', () => {
    assert.deepEqual(compose('auth: required\n')!.rules[0]!.admit, { appUsers: true });
    assert.deepEqual(admitOf('app-users: true'), { appUsers: true });
    assert.deepEqual(admitOf('required: true'), { appUsers: true });
    refused(() => admitOf('app-users: false'), /false.*not accepted/, { file: 'compose', field: 'x-svc.auth.app-users' });
    refused(() => admitOf('required: yes'), /must be true/, { field: 'x-svc.auth.required' });
  });

  it('`emails`: exact mailboxes, trimmed, lowercased, deduplicated', () => {
    assert.deepEqual(admitOf('emails: [" Ada@Example.com ", ada@example.com, bob+x@sub.example.org]'), {
      emails: ['ada@example.com', 'bob+x@sub.example.org'],
    });
    assert.deepEqual(admitOf('emails: "a@x.io, B@x.io"'), { emails: ['a@x.io', 'b@x.io'] });
    refused(() => admitOf('emails: [ada]'), /"ada" is not an email address/, { field: 'x-svc.auth.emails[0]' });
    refused(() => admitOf('emails: [a@x.io, "@example.com"]'), /domain, not an address/, { field: 'x-svc.auth.emails[1]' });
    refused(() => admitOf('emails: ["a b@x.io"]'), /not an email address/);
    refused(() => admitOf('emails: [a@localhost]'), /domain is not valid/);
    refused(() => admitOf('emails: []'), /is empty/, { field: 'x-svc.auth.emails' });
    refused(() => admitOf('emails: true'), /takes addresses/);
  });

  it('`owner`: the owning account', () => {
    assert.deepEqual(compose('auth: owner\n')!.rules[0]!.admit, { owner: true });
    assert.deepEqual(admitOf('owner: true'), { owner: true });
    refused(() => admitOf('owner: false'), /false.*not accepted/, { field: 'x-svc.auth.owner' });
    refused(() => admitOf('owner: admin'), /must be true/);
    refused(() => admitOf('owner:'), /is empty/);
  });

  it('`idp: true`: any identity of the identity provider', () => {
    assert.deepEqual(admitOf('idp: true'), { idp: { any: true } });
    assert.deepEqual(compose('auth: idp\n')!.rules[0]!.admit, { idp: { any: true } });
    refused(() => admitOf('idp: false'), /false.*not accepted/, { field: 'x-svc.auth.idp' });
  });

  it('`idp: [<email>]`: an exact verified account', () => {
    assert.deepEqual(admitOf('idp: [Ada@Corp.example]'), { idp: { values: ['ada@corp.example'] } });
    refused(() => admitOf('idp: ["ada@"]'), /not an email address/, { field: 'x-svc.auth.idp[0]' });
  });

  it('`idp: [<domain>]`: a hosted domain; the legacy `@domain` is the same domain', () => {
    assert.deepEqual(admitOf('idp: [Corp.Example, "@corp.example", "@other.example"]'), {
      idp: { values: ['corp.example', 'other.example'] },
    });
    refused(() => admitOf('idp: [localhost]'), /"localhost" is not a domain/);
    refused(() => admitOf('idp: ["corp_example.com"]'), /not a domain/);
  });

  it('`codehost: true`: any identity of the code-hosting provider', () => {
    assert.deepEqual(admitOf('codehost: true'), { codehost: { any: true } });
    assert.deepEqual(compose('auth: codehost\n')!.rules[0]!.admit, { codehost: { any: true } });
    refused(() => admitOf('codehost: false'), /false.*not accepted/, { field: 'x-svc.auth.codehost' });
  });

  it('`codehost: [<login_or_org>]`: logins or organizations, lowercased', () => {
    assert.deepEqual(admitOf('codehost: [Octocat, acme-corp, octocat, 1234]'), { codehost: { values: ['1234', 'acme-corp', 'octocat'] } });
    refused(() => admitOf('codehost: ["@octocat"]'), /without the @/, { field: 'x-svc.auth.codehost[0]' });
    refused(() => admitOf('codehost: [acme/admins]'), /teams and repositories are not accepted/);
    refused(() => admitOf('codehost: ["-acme"]'), /not a login or organization/);
  });
});

describe('policy rules (declaring)', () => {
  it('1. members are ORed: one rule admits every member named', () => {
    const p = compose('auth:\n  owner: true\n  emails: [a@x.io]\n  codehost: [acme]\n')!;
    assert.equal(p.rules.length, 1);
    assert.deepEqual(p.rules[0]!.admit, { owner: true, emails: ['a@x.io'], codehost: { values: ['acme'] } });
    refused(() => compose('auth:\n  paths: [/admin/**]\n'), /admits nobody: an empty policy/, { field: 'x-svc.auth' });
  });

  it('2. provider selectors are flat: a mailbox is an account, a bare domain a hosted domain', () => {
    assert.deepEqual(admitOf('idp: [a@corp.example, corp.example]'), { idp: { values: ['a@corp.example', 'corp.example'] } });
    refused(() => admitOf('idp: {domains: [corp.example]}'), /must be a list or a comma-separated string/, { field: 'x-svc.auth.idp' });
  });

  it('3. emails is provider-independent: its own member, not under a provider', () => {
    assert.deepEqual(admitOf('emails: [a@x.io]\nidp: [a@x.io]'), { emails: ['a@x.io'], idp: { values: ['a@x.io'] } });
    refused(() => admitOf('email: [a@x.io]'), /x-svc\.auth\.email: is not a policy field/);
  });

  it('4. auth gates, identity only resolves; every declaration admits the same identities', () => {
    const p = compose('auth: {owner: true, paths: [/admin/**]}\nidentity: owner\n')!;
    assert.deepEqual(
      p.rules.map((r) => [r.mode, r.paths]),
      [
        ['auth', ['/admin/**']],
        ['identity', ['/**']],
      ],
    );
    refused(
      () => compose('auth: {owner: true, paths: [/admin/**]}\nidentity: idp\n'),
      /admits idp any, but compose \(x-svc\.auth\) admits owner: all declarations in one app must admit the same identities/,
      {
        file: 'compose',
        field: 'x-svc.identity',
      },
    );
    const tree = treeDeclarations(
      'html',
      ['index.html', 'admin.html'],
      new Map([['admin.html', Buffer.from('<meta name="svc-auth" content="idp">')]]),
    );
    refused(
      () => combine([...composePolicy(parseYaml('auth: owner'), undefined), ...tree]),
      /all declarations in one app must admit the same identities/,
      {
        file: 'admin.html',
        field: 'meta svc-auth',
      },
    );
  });

  it('5. compose covers every path by default, a page its own route; explicit paths are exact, parameterized, /** or /prefix/**, with exceptions', () => {
    assert.deepEqual(compose('auth: owner\n')!.rules[0]!.paths, ['/**']);
    assert.deepEqual(page('<meta name="svc-auth" content="owner">')!.paths, ['/docs/page.html']);
    const p = compose(
      'auth:\n  owner: true\n  paths: [/admin, "/posts/[id]", "/files/[...path]", /admin/**, /admin/**, /]\n  except: [/admin/login]\n',
    )!;
    assert.deepEqual(p.rules[0]!.paths, ['/admin', '/posts/[id]', '/files/[...path]', '/admin/**', '/']);
    assert.deepEqual(p.rules[0]!.except, ['/admin/login']);
    for (const bad of [
      'admin',
      '/a/**/b',
      '/a*',
      '/*',
      '/a//b',
      '/a/../b',
      '/a?x=1',
      '/a#x',
      '/%61',
      '/a b',
      '/[id',
      '/[...rest]/x',
      '/[1x]',
    ]) {
      refused(() => compose(`auth:\n  owner: true\n  paths: [${JSON.stringify(bad)}]\n`), /x-svc\.auth\.paths\[0\]: /, {
        field: 'x-svc.auth.paths[0]',
      });
    }
    refused(() => compose('auth:\n  owner: true\n  except: ["/public/*"]\n'), /wildcard/, { field: 'x-svc.auth.except[0]' });
    refused(() => compose('auth:\n  owner: true\n  paths: []\n'), /is empty/, { field: 'x-svc.auth.paths' });
  });

  it('6. an email suffix is not sufficient to admit', () => {
    assert.deepEqual(admitOf('idp: [corp.example]'), { idp: { values: ['corp.example'] } });
    refused(() => admitOf('emails: ["*@corp.example"]'), /email suffix is not sufficient/);
    refused(() => admitOf('idp: ["*.corp.example"]'), /email suffix is not sufficient/);
    refused(() => admitOf('idp: ["*@corp.example"]'), /not an email address|wildcards/);
  });

  it('7. invalid patterns, identities, fields, or an empty policy fail, naming file and field', () => {
    assert.ok(compose('auth: owner\n'));
    refused(() => compose('auth:\n  owner: true\n  paths: [nope]\n'), /^compose: x-svc\.auth\.paths\[0\]: "nope" must start with \//);
    refused(() => compose('auth:\n  emails: [nope]\n'), /^compose: x-svc\.auth\.emails\[0\]: /);
    refused(() => compose('auth:\n  roles: [admin]\n'), /^compose: x-svc\.auth\.roles: is not a policy field/);
    refused(() => compose('auth: {}\n'), /^compose: x-svc\.auth: admits nobody/);
    refused(() => compose('auth:\n'), /^compose: x-svc\.auth: is empty/);
    refused(() => compose('auth: false\n'), /`false` is not a policy/);
    refused(() => compose('auth: true\n'), /write a provider word/);
    refused(() => compose('auth: everyone\n'), /"everyone" is not a provider/);
    refused(() => compose('auth: [owner, idp]\n'), /must be a provider word .* or a map/);
  });
});

describe('HTML meta tags', () => {
  it('svc-auth: gates only this page; content is a provider name', () => {
    const d = page('<meta name="svc-auth" content=" IDP ">')!;
    assert.deepEqual([d.mode, d.paths, d.admit], ['auth', ['/docs/page.html'], { idp: { any: true } }]);
    refused(() => page('<meta name="svc-auth" content="google">'), /"google" is not a provider/, {
      file: 'docs/page.html',
      field: 'meta svc-auth',
    });
    // `true`: gated, and the properties say who.
    assert.deepEqual(page('<meta name="svc-auth" content="true"><meta name="svc-auth-emails" content="a@x.io">')!.admit, {
      emails: ['a@x.io'],
    });
    refused(() => page('<meta name="svc-auth" content="true">'), /admits nobody/);
  });

  it('svc-identity: leaves the page public and resolves the optional identity', () => {
    const d = page('<meta name="svc-identity" content="codehost"><meta name="svc-auth-codehost" content="acme">')!;
    assert.deepEqual([d.mode, d.admit], ['identity', { codehost: { any: true } }]);
    refused(() => page('<meta name="svc-identity" content="owner"><meta name="svc-auth" content="owner">'), /not both/, {
      field: 'meta svc-identity',
    });
    assert.deepEqual(page('<meta name="svc-identity" content="true"><meta name="svc-auth-emails" content="a@x.io">')!.admit, {
      emails: ['a@x.io'],
    });
  });

  it('svc-auth-owner: content true', () => {
    assert.deepEqual(page('<meta name="svc-auth-owner" content="TRUE">')!.admit, { owner: true });
    refused(() => page('<meta name="svc-auth-owner" content="false">'), /false.*not accepted/, { field: 'meta svc-auth-owner' });
    refused(() => page('<meta name="svc-auth-owner" content="yes">'), /must be true/);
  });

  it('svc-auth-emails: comma-separated addresses', () => {
    assert.deepEqual(page('<meta name="svc-auth-emails" content="Ada@X.io, bob@x.io ,ada@x.io">')!.admit, {
      emails: ['ada@x.io', 'bob@x.io'],
    });
    refused(() => page('<meta name="svc-auth-emails" content="ada@x.io,,bob@x.io">'), /empty item/, { field: 'meta svc-auth-emails' });
    refused(() => page('<meta name="svc-auth-emails" content="ada">'), /not an email address/);
  });

  it('svc-auth-codehost: comma-separated logins or organizations, or true', () => {
    assert.deepEqual(page('<meta name="svc-auth-codehost" content="Acme, octocat">')!.admit, { codehost: { values: ['acme', 'octocat'] } });
    assert.deepEqual(page('<meta name="svc-auth-codehost" content="true">')!.admit, { codehost: { any: true } });
    refused(() => page('<meta name="svc-auth-codehost" content="acme/team">'), /teams/, { field: 'meta svc-auth-codehost' });
  });

  it('svc-auth-idp: comma-separated accounts or domains, or true', () => {
    assert.deepEqual(page('<meta name="svc-auth-idp" content="@Corp.example, ada@corp.example">')!.admit, {
      idp: { values: ['ada@corp.example', 'corp.example'] },
    });
    assert.deepEqual(page('<meta name="svc-auth-idp" content="true">')!.admit, { idp: { any: true } });
    refused(() => page('<meta name="svc-auth-idp" content="false">'), /false.*not accepted/, { field: 'meta svc-auth-idp' });
  });

  it('svc-auth-paths: the paths to gate instead of the page', () => {
    const d = page('<meta name="svc-auth" content="owner"><meta name="svc-auth-paths" content="/admin/**, /reports /posts/[id]">')!;
    assert.deepEqual(d.paths, ['/admin/**', '/reports', '/posts/[id]']);
    refused(() => page('<meta name="svc-auth" content="owner"><meta name="svc-auth-paths" content="/admin/*">'), /wildcard/, {
      field: 'meta svc-auth-paths',
    });
  });

  it('svc-auth-except: paths excepted', () => {
    const d = page(
      '<meta name="svc-auth" content="owner"><meta name="svc-auth-paths" content="/**"><meta name="svc-auth-except" content="/public/**">',
    )!;
    assert.deepEqual(d.except, ['/public/**']);
    refused(() => page('<meta name="svc-auth" content="owner"><meta name="svc-auth-except" content="public">'), /must start with \//, {
      field: 'meta svc-auth-except',
    });
  });

  it('rule 1: provider lists are trimmed, lowercased and deduplicated; true admits any identity of the provider', () => {
    assert.deepEqual(page('<meta name="svc-auth-idp" content=" A@Corp.Example ,a@corp.example">')!.admit, {
      idp: { values: ['a@corp.example'] },
    });
    // `true` admits any: listed values then add nothing.
    assert.deepEqual(page('<meta name="svc-auth" content="idp"><meta name="svc-auth-idp" content="corp.example">')!.admit, {
      idp: { any: true },
    });
    refused(() => page('<meta name="svc-auth-idp" content="corp.example,">'), /empty item/);
  });

  it('rule 2: unknown properties, false and empty values fail', () => {
    assert.equal(page('<meta name="description" content="x"><meta name="svc-theme" content="dark">'), undefined);
    refused(() => page('<meta name="svc-auth-roles" content="admin">'), /not a policy property/, { field: 'meta svc-auth-roles' });
    refused(() => page('<meta name="svc-identity-emails" content="a@x.io">'), /not a policy property/);
    refused(() => page('<meta name="svc-auth" content="false">'), /`false` is not a policy/);
    refused(() => page('<meta name="svc-auth" content="">'), /empty content/, { field: 'meta svc-auth' });
    refused(() => page('<meta name="svc-auth-emails">'), /empty content/);
    refused(() => page('<meta name="svc-auth" content="owner"><meta name="SVC-AUTH" content="idp">'), /more than once/);
  });

  it('rule 3: identity takes the same identity properties but not paths or except', () => {
    assert.deepEqual(page('<meta name="svc-identity" content="owner"><meta name="svc-auth-emails" content="a@x.io">')!.admit, {
      owner: true,
      emails: ['a@x.io'],
    });
    refused(
      () => page('<meta name="svc-identity" content="owner"><meta name="svc-auth-paths" content="/**">'),
      /svc-identity takes no paths/,
      { field: 'meta svc-auth-paths' },
    );
    refused(
      () => page('<meta name="svc-identity" content="owner"><meta name="svc-auth-except" content="/x">'),
      /svc-identity takes no paths/,
      { field: 'meta svc-auth-except' },
    );
  });

  it('reads tags as a browser parses the page: anywhere in the document, attributes in any order and quoting, entities decoded; not in comments', () => {
    assert.deepEqual(
      htmlDeclaration('a.html', `<body><p>x</p><META content='a&#64;x.io' NAME=svc-auth-emails></body>`, ['/a.html'])!.admit,
      { emails: ['a@x.io'] },
    );
    assert.deepEqual(
      htmlDeclaration('a.html', `<head><noscript><meta name="svc-auth" content="owner"></noscript></head>`, ['/a.html'])!.admit,
      { owner: true },
    );
    assert.equal(
      htmlDeclaration(
        'a.html',
        `<!-- <meta name="svc-auth" content="owner"> --><script>const s = '<meta name="svc-auth" content="owner">'</script>`,
        ['/a.html'],
      ),
      undefined,
    );
  });
});

describe('compose configuration', () => {
  it('1. auth is a provider word, owner, or a structured object', () => {
    assert.deepEqual(compose('auth: Owner\n')!.rules[0]!.admit, { owner: true });
    assert.deepEqual(
      compose('auth: {paths: [/a], except: [/a/b], owner: true, emails: [a@x.io], idp: [x.io], codehost: true}\n')!.rules[0],
      {
        mode: 'auth',
        source: 'compose',
        paths: ['/a'],
        except: ['/a/b'],
        admit: { owner: true, emails: ['a@x.io'], idp: { values: ['x.io'] }, codehost: { any: true } },
      },
    );
    refused(() => compose('auth: 3\n'), /must be a provider word/);
  });

  it('2. paths default to ["/**"]; except wins over paths', () => {
    const p = compose('auth:\n  owner: true\n  except: [/health, /public/**]\n')!;
    assert.deepEqual(p.rules[0]!.paths, ['/**']);
    assert.equal(decide(p, '/dashboard')?.mode, 'auth');
    assert.equal(decide(p, '/public/logo.png'), undefined);
    assert.equal(decide(p, '/health'), undefined);
    refused(() => compose('auth:\n  owner: true\n  except: /a,\n'), /empty item/);
  });

  it('3. top-level auth is the default for the service; a service-level x-svc.auth replaces it', () => {
    const top: unknown = parseYaml('auth: owner');
    assert.deepEqual(combine(composePolicy(top, { name: 'web', xsvc: { machines: 2 } }))!.rules[0]!.admit, { owner: true });
    const replaced = combine(composePolicy(top, { name: 'web', xsvc: { auth: 'idp' } }))!;
    assert.deepEqual(replaced.rules, [{ mode: 'auth', source: 'compose', paths: ['/**'], admit: { idp: { any: true } } }]);
    refused(() => composePolicy(top, { name: 'web', xsvc: { auth: { owner: false } } }), /false/, {
      field: 'services.web.x-svc.auth.owner',
    });
    // The replaced top-level policy is still checked.
    refused(() => composePolicy(parseYaml('auth: nobody'), { name: 'web', xsvc: { auth: 'idp' } }), /not a provider/, {
      field: 'x-svc.auth',
    });
  });

  it('4. x-svc.identity resolves identity without a gate (and takes no paths)', () => {
    const p = compose('identity: {idp: [corp.example]}\n')!;
    assert.deepEqual(p.rules, [{ mode: 'identity', source: 'compose', paths: ['/**'], admit: { idp: { values: ['corp.example'] } } }]);
    assert.equal(decide(p, '/anything')?.mode, 'identity');
    refused(() => compose('identity: {owner: true, paths: [/a]}\n'), /identity takes no paths/, { field: 'x-svc.identity.paths' });
  });

  it('5 and 6: a Markdown page uses the same structure; without paths it covers its own route', () => {
    const md = (front: string) =>
      markdownDeclarations('guide/setup.md', `---\ntitle: Setup\n${front}---\n# Setup\n`, ['/guide/setup.md', '/guide/setup']);
    const [own] = md('auth:\n  emails: [A@x.io]\n');
    assert.deepEqual([own!.mode, own!.paths, own!.admit], ['auth', ['/guide/setup.md', '/guide/setup'], { emails: ['a@x.io'] }]);
    assert.deepEqual(md('auth: {owner: true, paths: [/guide/**]}\n')[0]!.paths, ['/guide/**']);
    assert.deepEqual(md('x-svc:\n  identity: owner\n')[0]!.mode, 'identity');
    assert.deepEqual(md(''), []);
    refused(() => md('auth: {owner: maybe}\n'), /must be true/, { file: 'guide/setup.md', field: 'front matter auth.owner' });
    refused(() => md('identity: {owner: true, except: [/x]}\n'), /identity takes no paths/, { field: 'front matter identity.except' });
    refused(() => md('x-svc:\n  machines: 2\n'), /not a page setting/, { field: 'front matter x-svc.machines' });
    refused(() => md('auth: owner\nx-svc: {auth: idp}\n'), /declared twice/);
    // Malformed front matter is dropped by the runtime, but not when it declares a policy.
    refused(() => md('auth: owner\nauth: idp\n'), /not valid YAML and declares a policy/, { field: 'front matter' });
    assert.deepEqual(md('title: [unclosed\n'), []);
  });

  it('reads front matter exactly where the runtime does', () => {
    for (const source of [
      '---\nauth: owner\n---\n# x',
      '\uFEFF---\r\nauth: owner\r\n...\r\nbody',
      '--- \nauth: owner\n---',
      'text\n---\nauth: owner\n---\n',
      '---\nauth: owner\n',
    ]) {
      const runtimeSees = 'auth' in splitFrontMatter(source).frontMatter;
      assert.equal(markdownDeclarations('p.md', source, ['/p']).length > 0, runtimeSees, JSON.stringify(source));
    }
  });
});

describe('a tree: page routes and one policy for the app', () => {
  const files = new Set([
    'index.html',
    'about.html',
    'old.htm',
    'docs/index.html',
    'notes.md',
    'guide/README.md',
    'guide/a.md',
    'blog/index.md',
    'blog/README.md',
  ]);

  it('a page covers every URL the runtime serves it at', () => {
    assert.deepEqual(pageRoutes('index.html', 'html', files), ['/index.html', '/index', '/']);
    assert.deepEqual(pageRoutes('about.html', 'static', files), ['/about.html', '/about']);
    assert.deepEqual(pageRoutes('old.htm', 'html', files), ['/old.htm']);
    assert.deepEqual(pageRoutes('docs/index.html', 'html', files), ['/docs/index.html', '/docs/index', '/docs/', '/docs']);
    assert.deepEqual(pageRoutes('guide/a.md', 'markdown', files), ['/guide/a.md', '/guide/a']);
    assert.deepEqual(pageRoutes('guide/README.md', 'markdown', files), ['/guide/README.md', '/guide/README', '/guide/', '/guide']);
    // A README is not the index where an index.md is.
    assert.deepEqual(pageRoutes('blog/README.md', 'markdown', files), ['/blog/README.md', '/blog/README']);
    // Outside a Markdown site, a .md file is only its source.
    assert.deepEqual(pageRoutes('notes.md', 'html', files), ['/notes.md']);
  });

  it('combines compose, HTML and Markdown declarations that admit the same identities', () => {
    const pages = new Map([
      ['about.html', Buffer.from('<meta name="svc-identity" content="owner">')],
      ['index.html', Buffer.from('<h1>public</h1>')],
      ['notes.md', Buffer.from('---\nauth: owner\n---\n')],
    ]);
    const policy = combine([
      ...composePolicy(parseYaml('auth: {owner: true, paths: [/admin/**]}'), undefined),
      ...treeDeclarations('html', [...files], pages),
    ])!;
    assert.deepEqual(
      policy.rules.map((r) => [r.source, r.mode, r.paths]),
      [
        ['compose', 'auth', ['/admin/**']],
        ['about.html', 'identity', ['/about.html', '/about']],
        ['notes.md', 'auth', ['/notes.md']],
      ],
    );
    assert.equal(combine([]), undefined);
  });

  it('refuses more declarations than an App holds', () => {
    const many = new Map(
      Array.from({ length: 257 }, (_, i) => [`p${i}.html`, Buffer.from('<meta name="svc-auth" content="owner">')] as const),
    );
    refused(() => combine(treeDeclarations('html', [...many.keys()], many)), /at most 256/);
  });
});

describe('matching request paths', () => {
  const policy = compose(
    'auth:\n  owner: true\n  paths: [/admin/**, /reports, "/posts/[id]/edit", "/files/[...path]"]\n  except: [/admin/login]\nidentity: owner\n',
  )!;
  const gated = (p: string) => decide(policy, p)?.mode === 'auth';

  it('exact paths (with or without a trailing slash), parameters, /prefix/** including the prefix, and exceptions', () => {
    for (const p of ['/admin', '/admin/', '/admin/users/1', '/reports', '/reports/', '/posts/42/edit', '/files/a', '/files/a/b'])
      assert.ok(gated(p), p);
    for (const p of ['/administrator', '/reports/2024', '/posts/42', '/posts//edit', '/files', '/admin/login', '/'])
      assert.ok(!gated(p), p);
    assert.equal(decide(policy, '/')?.mode, 'identity');
    assert.equal(decide(compose('identity: owner\n'), '/admin')?.mode, 'identity');
    assert.equal(decide(undefined, '/x'), undefined);
  });

  it('fails closed: encodings, dot segments, case and lenient readings reach the gate; an exception matches only exactly', () => {
    for (const p of [
      '/%61dmin',
      '/ADMIN/x',
      '/public/../admin',
      '//admin',
      '/admin;jsessionid=1',
      '/x\\..\\admin',
      '/Admin/Login',
      '/admin/login/../users',
      '/%E0%A4%A',
    ])
      assert.ok(gated(p), p);
    assert.ok(!gated('/admin/login?next=/x'));
    assert.equal(normalizeRequestPath('/a/./b/../c//d?q'), '/a/c/d');
    assert.equal(normalizeRequestPath('/%zz'), undefined);
    assert.ok(matchesPattern('/**', '/'));
    assert.ok(!matchesPattern('/Admin', '/admin'));
  });
});
