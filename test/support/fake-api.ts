// Handler tests without a cluster or PostgreSQL: a list of operations mounted through the real
// buildRouter (authentication, authorization, body and query parsing, error mapping all real),
// on 127.0.0.1:0, with in-memory fakes of what the operations use. Each fake is typed as a Pick of
// the real member of ApiDeps, so a change of a real signature fails to compile here.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { Account } from '../../lib/accounts.js';
import { loadConfig } from '../../lib/config.js';
import { DomainError } from '../../lib/errors.js';
import type { EventRecord } from '../../lib/events.js';
import { createLogger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { TokenRejected, type Principal, type TokenRecord } from '../../lib/tokens/store.js';
import { effectiveAuthority, formatRestriction, type Restriction } from '../../lib/tokens/token.js';
import { meters, type MeterTotals } from '../../lib/usage.js';
import { Authenticator } from '../../api/middleware/authenticate.js';
import { errorHandler } from '../../api/middleware/errors.js';
import { RateLimiter } from '../../api/middleware/rate-limit.js';
import { requestContext } from '../../api/middleware/request-context.js';
import type { Operation } from '../../api/operation.js';
import { within } from '../../api/quotas.js';
import { appRecord, type AppRecord } from '../../api/repositories/app-record.js';
import type { Env } from '../../api/repositories/env.js';
import { buildRouter, unmatched } from '../../api/router.js';
import type { ApiDeps } from '../../api/deps.js';
import type { ApiState } from '../../api/state.js';

/** The one account of a fake API. */
export const account: Account = {
  id: 'acc_1',
  email: 'owner@example.com',
  name: 'Owner',
  namespace: 'acct-1',
  createdAt: new Date('2026-01-01T00:00:00Z'),
};

/**
 * Bearer tokens by their text: `token` has every action and app; tokenWith() gives others, and
 * issue() (POST /account/tokens) mints ones that authenticate here too, until revoked.
 */
export class FakeTokens implements Pick<ApiDeps['tokens'], 'authenticate' | 'list' | 'issue' | 'revoke'> {
  readonly token: string;
  /** What list() answers: the tokens issue() made, newest first. */
  readonly records: TokenRecord[] = [];
  private readonly principals = new Map<string, Principal>();
  private readonly revoked = new Set<string>();
  private n = 0;

  constructor(private readonly clock: () => Date = () => new Date()) {
    this.token = this.tokenWith([]);
  }

  /** A token of the account with these restrictions (actions, apps); it is not listed. */
  tokenWith(restrictions: Restriction[], lineage: string[] = []): string {
    const nonce = `nonce${++this.n}`;
    const all = [...restrictions, { kind: 'expires' as const, at: new Date(this.clock().getTime() + 86400e3) }];
    const token = `svc_fake_${this.n}`;
    this.principals.set(token, {
      accountId: account.id,
      nonce,
      authority: effectiveAuthority(all),
      restrictions: all,
      lineage: [...lineage, nonce],
      id: `tok_${nonce}`,
      derived: lineage.length > 0,
      asMinted: true,
    });
    return token;
  }

  authenticate(token: string): Promise<Principal> {
    const p = this.principals.get(token);
    if (!p) return Promise.reject(new TokenRejected('unknown', 'unknown token'));
    if (p.lineage.some((id) => this.revoked.has(id))) return Promise.reject(new TokenRejected('revoked', 'token revoked'));
    return Promise.resolve(p);
  }

  issue(...[accountId, opts]: Parameters<ApiDeps['tokens']['issue']>): Promise<{ token: string; record: TokenRecord }> {
    assert.equal(accountId, account.id);
    const expiresAt = opts.expiresAt ?? new Date(this.clock().getTime() + 90 * 86400e3);
    const caveats = [...(opts.inherited ?? []), ...(opts.restrictions ?? [])];
    const token = this.tokenWith(caveats, opts.lineage);
    const principal = this.principals.get(token)!;
    const record: TokenRecord = {
      nonce: principal.nonce,
      name: opts.name ?? null,
      restrictions: [...caveats, { kind: 'expires' as const, at: expiresAt }].map(formatRestriction),
      createdAt: this.clock(),
      expiresAt,
      lastUsedAt: null,
      revoked: false,
    };
    this.records.unshift(record);
    return Promise.resolve({ token, record });
  }

  list(accountId: string): Promise<TokenRecord[]> {
    assert.equal(accountId, account.id);
    return Promise.resolve(this.records.map((r) => ({ ...r, revoked: this.revoked.has(r.nonce) })));
  }

  revoke(accountId: string, id: string): Promise<boolean> {
    if (accountId !== account.id || ![...this.principals.values()].some((p) => p.nonce === id)) return Promise.resolve(false);
    this.revoked.add(id);
    return Promise.resolve(true);
  }
}

export const fakeAccounts: ApiDeps['accounts'] = {
  get: (id) => Promise.resolve(id === account.id ? account : undefined),
};

/** Apps as App objects in a Map (namespace/name), with the real repository's refusals. */
export class FakeApps implements Pick<ApiDeps['apps'], 'list' | 'find' | 'create' | 'delete' | 'patchSpec'> {
  readonly objects = new Map<string, App>();

  /** Puts an App there as the controller would have it (for tests that start with one). */
  put(namespace: string, name: string, spec: App['spec'] = {}, status?: App['status']): AppRecord {
    const app: App = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'App',
      metadata: { namespace, name, uid: randomUUID(), generation: 1, resourceVersion: '1', creationTimestamp: new Date() },
      spec,
      ...(status ? { status } : {}),
    };
    this.objects.set(`${namespace}/${name}`, app);
    return appRecord(app);
  }

  list(namespace: string): AppRecord[] {
    return [...this.objects.values()]
      .filter((a) => a.metadata.namespace === namespace)
      .map(appRecord)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  find(namespace: string, idOrName: string): Promise<AppRecord | undefined> {
    return Promise.resolve(this.list(namespace).find((a) => a.name === idOrName || a.id === idOrName));
  }

  create(namespace: string, name: string, spec: App['spec']): Promise<AppRecord> {
    if (this.objects.has(`${namespace}/${name}`))
      return Promise.reject(new DomainError('conflict', `an app named "${name}" already exists`));
    return Promise.resolve(this.put(namespace, name, spec));
  }

  patchSpec(namespace: string, name: string, spec: Record<string, unknown>): Promise<AppRecord> {
    const app = this.objects.get(`${namespace}/${name}`);
    if (!app) return Promise.reject(new DomainError('not_found', `app ${name} not found`));
    const merged = { ...app.spec } as Record<string, unknown>;
    for (const [k, v] of Object.entries(spec)) {
      if (v === null) delete merged[k];
      else merged[k] = v;
    }
    const next: App = { ...app, spec: merged };
    this.objects.set(`${namespace}/${name}`, next);
    return Promise.resolve(appRecord(next));
  }

  delete(namespace: string, name: string): Promise<void> {
    if (!this.objects.delete(`${namespace}/${name}`)) return Promise.reject(new DomainError('not_found', `app ${name} not found`));
    return Promise.resolve();
  }
}

/** Each app's environment, by the app's ID; `writes` counts what was written. */
export class FakeEnv implements Pick<ApiDeps['env'], 'read' | 'write'> {
  readonly byApp = new Map<string, Env>();
  writes = 0;

  read(app: AppRecord): Promise<Env> {
    return Promise.resolve({ ...(this.byApp.get(app.id) ?? {}) });
  }

  write(app: AppRecord, env: Env): Promise<void> {
    this.writes++;
    this.byApp.set(app.id, { ...env });
    return Promise.resolve();
  }
}

/** The account's event log in an array: what was recorded, and what list and horizon answer from. */
export class FakeEvents implements Pick<ApiDeps['events'], 'record' | 'list' | 'horizon'> {
  readonly log: EventRecord[] = [];
  /** The highest id purged (events at or below it are gone). */
  purgedThrough = 0;
  /** The options of each list call, as the handler passed them. */
  readonly lists: Array<Parameters<ApiDeps['events']['list']>[1]> = [];

  record = (_accountId: string, type: string, subject: string, data: Record<string, unknown> = {}): Promise<void> => {
    this.log.push({ id: this.log.length + 1, type, subject, data, createdAt: new Date() });
    return Promise.resolve();
  };

  list = (_accountId: string, opts: Parameters<ApiDeps['events']['list']>[1]): Promise<EventRecord[]> => {
    this.lists.push(opts);
    const types = opts.types;
    const kept = this.log.filter(
      (e) =>
        e.id > this.purgedThrough &&
        e.id > (opts.after ?? 0) &&
        (!types?.length || types.some((t) => t === '*' || t === e.type || (t.endsWith('.*') && e.type.startsWith(t.slice(0, -1))))) &&
        (opts.app === undefined || e.subject === opts.app),
    );
    return Promise.resolve(kept.slice(0, opts.limit));
  };

  horizon = (): Promise<number> => Promise.resolve(this.purgedThrough);
}

/** Follows deliver what is already in the log after the cursor, then nothing. */
export class FakeEventHub implements Pick<ApiDeps['eventHub'], 'follow'> {
  followers = 0;

  constructor(private readonly events: FakeEvents) {}

  follow(...[, follower]: Parameters<ApiDeps['eventHub']['follow']>): Promise<() => void> {
    this.followers++;
    const due = this.events.log.filter((e) => e.id > follower.after && (!follower.app || e.subject === follower.app));
    if (due.length) follower.deliver(due);
    return Promise.resolve(() => void this.followers--);
  }
}

/** The account's lock: one step at a time is all a test needs. */
export const fakeAccountLock: Pick<ApiDeps['accountLock'], 'hold'> = {
  hold: (_accountId, step) => step(),
};

/** The app quota: `appLimit` apps in the account. */
export class FakeActions implements Pick<ApiDeps['actions'], 'assertAppFits'> {
  constructor(
    private readonly apps: FakeApps,
    public appLimit = 10,
  ) {}

  assertAppFits(namespace: string): void {
    within(this.apps.list(namespace).length, 1, this.appLimit, 'apps (previews included)', 'delete one first');
  }
}

/** No usage recorded: every meter 0. */
export const fakeUsage: Pick<ApiDeps['usage'], 'between' | 'charges' | 'byApp' | 'history'> = {
  between: () => Promise.resolve(zeroMeters()),
  charges: () => Promise.resolve({ domain_registrations: {} }),
  byApp: () => Promise.resolve({}),
  history: () => Promise.resolve([]),
};

function zeroMeters(): MeterTotals {
  return Object.fromEntries(meters.map((m) => [m, 0])) as MeterTotals;
}

/** Every fake, for the operation groups to take what they need (each group's Deps checks it). */
export interface Fakes {
  config: ApiDeps['config'];
  tokens: FakeTokens;
  accounts: ApiDeps['accounts'];
  apps: FakeApps;
  env: FakeEnv;
  events: FakeEvents;
  eventHub: FakeEventHub;
  accountLock: Pick<ApiDeps['accountLock'], 'hold'>;
  actions: FakeActions;
  usage: Pick<ApiDeps['usage'], 'between' | 'charges' | 'byApp' | 'history'>;
  /** The API's clock: `time.now` when a test sets it, else the wall clock. */
  clock: () => Date;
  time: { now?: Date | undefined };
}

/** The fakes, with the configuration of these SVC_* variables (else the defaults). */
export function fakes(env: Record<string, string> = {}): Fakes {
  const apps = new FakeApps();
  const events = new FakeEvents();
  const time: Fakes['time'] = {};
  const clock = () => time.now ?? new Date();
  return {
    config: loadConfig(env, { exists: () => false }),
    tokens: new FakeTokens(clock),
    accounts: fakeAccounts,
    apps,
    env: new FakeEnv(),
    events,
    eventHub: new FakeEventHub(events),
    accountLock: fakeAccountLock,
    actions: new FakeActions(apps),
    usage: fakeUsage,
    clock,
    time,
  };
}

export interface FakeApi {
  url: string;
  f: Fakes;
  /** A request with the full token (or `token`; null for none), a JSON body when given one. */
  request(
    method: string,
    path: string,
    body?: unknown,
    opts?: { token?: string | null; headers?: Record<string, string> },
  ): Promise<{ status: number; headers: Headers; body: unknown; text: string }>;
  close(): Promise<void>;
}

/** Serves the operations `mount` gives for the fakes, as the API does (api/server.ts createApi), without the machine endpoints. */
export async function startFakeApi(mount: (f: Fakes) => Operation[], f: Fakes = fakes()): Promise<FakeApi> {
  const app = new Koa<ApiState>();
  const router = buildRouter(mount(f), f, new Authenticator(f), new RateLimiter(1e6, 1e6));
  app.use(requestContext(createLogger('fake-api', 'silent')));
  app.use(errorHandler());
  app.use(router.routes());
  app.use(unmatched(router));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    f,
    async request(method, path, body, opts = {}) {
      const token = opts.token === undefined ? f.tokens.token : opts.token;
      const headers: Record<string, string> = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...opts.headers };
      let payload: string | undefined;
      if (body !== undefined) {
        payload = typeof body === 'string' ? body : JSON.stringify(body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${url}${path}`, { method, headers, body: payload });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // Not JSON (a text body): `text` has it.
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
