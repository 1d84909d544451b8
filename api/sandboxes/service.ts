// What the API decides about sandboxes (their action layer): open (create the Sandbox and wait, on
// the cache, until it is served), exec and files through the agent client, destroy, and the
// one-shot forms (eval, /sandbox/exec) that do all three. The account's limits are applied here:
// open sandboxes at once (429 with Retry-After) and execs per minute (a token bucket per account,
// per API replica). Handlers parse, authorize and present; what is refused here is a DomainError
// (lib/errors.ts), or an ApiError where the answer carries a Retry-After the domain's kinds do not
// (429 rate_limited, 409 not ready yet). Sandboxes are read as records (api/sandboxes/repository.ts).
import type { Readable } from 'node:stream';
import { drain } from '../../lib/drain.js';
import { DomainError } from '../../lib/errors.js';
import type { EventKind } from '../../lib/event-kinds.js';
import type { Logger } from '../../lib/logger.js';
import type { SandboxSpec } from '../../lib/resources/index.js';
import type { AgentExecRequest, ExecResult } from '../../lib/sandbox/exec.js';
import type { InstalledRuntime } from '../../lib/sandbox/runtimes.js';
import { overLimits, resourcesOf, type SandboxResources } from '../../lib/sandbox/limits.js';
import type { Actor } from '../deploys/actions.js';
import { ApiError } from '../errors.js';
import { RateLimiter } from '../middleware/rate-limit.js';
import type { AccountLock } from '../quotas.js';
import { SandboxUse } from './activity.js';
import { AgentClient, type AgentTarget } from './agent-client.js';
import type { SandboxRecord, SandboxRepository } from './repository.js';
import type { RuntimeList } from './runtimes.js';

export interface SandboxLimits {
  maxOpenPerAccount: number;
  execPerMinute: number;
  outputLimitBytes: number;
}

export interface OpenInput {
  runtime?: string | undefined;
  network?: boolean | undefined;
  idleTimeoutSeconds?: number | undefined;
  maxLifetimeSeconds?: number | undefined;
  resources?: Partial<SandboxResources> | undefined;
  /** How long to wait for the sandbox to be served; 0 answers at once (phase Pending). */
  waitMs?: number | undefined;
}

/** An exec as a tenant asks it (api/operations/sandboxes.ts validates the body into this). */
export interface ExecInput {
  command?: string | undefined;
  argv?: string[] | undefined;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  /** Text written to its standard input; not with stdinBase64. */
  stdin?: string | undefined;
  /** Bytes written to its standard input, base64; not with stdin. */
  stdinBase64?: string | undefined;
  timeoutSeconds?: number | undefined;
  maxOutputBytes?: number | undefined;
}

/** Code to evaluate in a one-shot sandbox (POST /eval). */
export interface EvalInput {
  /** A runtime name or alias (GET /runtimes). */
  runtime: string;
  code: string;
  network?: boolean | undefined;
}

export interface SandboxServiceDeps {
  sandboxes: Pick<SandboxRepository, 'list' | 'find' | 'create' | 'until' | 'stopSandbox' | 'recordActivity'>;
  runtimes: Pick<RuntimeList, 'list' | 'resolve'>;
  /** The platform's key, from which each sandbox agent's token is derived; without it no sandbox is reached (503). */
  agentKey: Buffer | undefined;
  /** What reaches the sandboxes' agents; an AgentClient with agentKey unless given (tests give a fake). */
  agents?: Pick<AgentClient, 'exec' | 'execStream' | 'upload' | 'download' | 'close'> | undefined;
  limits: SandboxLimits;
  /** The account's lock, under which the open sandboxes are counted and one more made (api/quotas.ts). */
  lock: Pick<AccountLock, 'hold'>;
  /** Records an event in the account's log (lib/events.ts); a failure is logged, not thrown. */
  recordEvent: (accountId: string, type: EventKind, subject: string, data: Record<string, unknown>) => Promise<void>;
  log: Logger;
}

/** What an exec of the API answers: the agent's result and which sandbox ran it. */
export type ExecAnswer = ExecResult & { sandbox: string; launch: 'warm' | 'cold' | null };

export const defaultExecTimeoutSeconds = 60;
/** Execs running at once in one sandbox, held by the API (the agent's own limit is the tenant's to lift). */
export const maxExecsPerSandbox = 16;
/** How long a file transfer may run. */
const transferMs = 600_000;
/** After an exec's timeout, how long its end may take to come back. */
const execGraceMs = 15_000;
/** A sandbox not served by then answers as it is (Pending); the controllers give up at 120 s. */
export const defaultOpenWaitMs = 60_000;

/** The standard input of an exec, decoded; both forms at once are refused (400). */
function stdinOf(input: ExecInput): Buffer | undefined {
  if (input.stdin !== undefined && input.stdinBase64 !== undefined)
    throw new DomainError('invalid', 'invalid body: give stdin or stdin_base64, not both');
  if (input.stdin !== undefined) return Buffer.from(input.stdin, 'utf8');
  return input.stdinBase64 !== undefined ? Buffer.from(input.stdinBase64, 'base64') : undefined;
}

export class SandboxService {
  private readonly agents: Pick<AgentClient, 'exec' | 'execStream' | 'upload' | 'download' | 'close'>;
  private readonly use: SandboxUse;
  private readonly execRate: RateLimiter;
  private readonly repo: SandboxServiceDeps['sandboxes'];
  private readonly limits: SandboxLimits;
  private readonly log: Logger;

  constructor(private readonly d: SandboxServiceDeps) {
    ({ sandboxes: this.repo, limits: this.limits, log: this.log } = d);
    this.agents = d.agents ?? new AgentClient(d.agentKey);
    this.use = new SandboxUse((ns, name, value) => d.sandboxes.recordActivity(ns, name, value), maxExecsPerSandbox, d.log);
    const perMinute = d.limits.execPerMinute;
    this.execRate = new RateLimiter(
      perMinute / 60,
      perMinute,
      () => Date.now(),
      () => `exec rate exceeded: ${perMinute} execs per minute per account`,
    );
  }

  close(): void {
    this.agents.close();
    this.use.close();
  }

  /** The runtimes every sandbox has (GET /runtimes): 503 until the first sandbox pod has reported them. */
  runtimes(): Promise<InstalledRuntime[]> {
    return this.d.runtimes.list();
  }

  /** The account's sandboxes, newest first: the open ones, or `all` those still kept. */
  list(actor: Actor, all: boolean): SandboxRecord[] {
    return this.repo.list(actor.namespace).filter((s) => all || s.open);
  }

  /** A sandbox of the account, as a record; 404 if it has none by that ID. */
  get(actor: Actor, id: string): SandboxRecord {
    const s = this.repo.find(actor.namespace, id);
    if (!s) throw new DomainError('not_found', `sandbox ${id} not found`);
    return s;
  }

  async open(actor: Actor, input: OpenInput): Promise<SandboxRecord> {
    const runtime = await this.d.runtimes.resolve(input.runtime ?? 'python');
    const resources = input.resources ? resourcesOf(input.resources) : undefined;
    const over = resources && overLimits(resources);
    if (over) throw new DomainError('invalid', `resources over the sandbox maximum: ${over}`);
    const ns = actor.namespace;
    const spec: SandboxSpec = {
      runtime,
      network: input.network === true,
      ...(input.idleTimeoutSeconds !== undefined ? { idleTimeoutSeconds: input.idleTimeoutSeconds } : {}),
      ...(input.maxLifetimeSeconds !== undefined ? { maxLifetimeSeconds: input.maxLifetimeSeconds } : {}),
      ...(resources ? { resources } : {}),
    };
    // Counted and made under the account's lock, and in the cache before the next one counts.
    const created = await this.d.lock.hold(actor.accountId, async () => {
      const open = this.repo.list(ns).filter((s) => s.open);
      if (open.length >= this.limits.maxOpenPerAccount) {
        const next = Math.min(...open.map((s) => new Date(s.idleExpiresAt ?? s.expiresAt ?? Date.now() + 5000).getTime()));
        const retry = Math.max(1, Math.min(3600, Math.ceil((next - Date.now()) / 1000)));
        throw new ApiError(
          'rate_limited',
          `${open.length} sandboxes are open (at most ${this.limits.maxOpenPerAccount} per account): destroy one (DELETE /sandboxes/{id}) or retry when one ends`,
          { 'Retry-After': String(retry) },
        );
      }
      const made = await this.repo.create(ns, spec, actor.accountId);
      await this.repo.until(ns, made.id, () => true, 10_000);
      return made;
    });
    await this.d
      .recordEvent(actor.accountId, 'sandbox.opened', created.id, {
        sandbox: created.id,
        runtime,
        network: spec.network,
      })
      .catch((err: unknown) => this.log.warn({ err, sandbox: created.id }, 'Recording sandbox.opened failed'));
    const waitMs = input.waitMs ?? defaultOpenWaitMs;
    if (waitMs <= 0) return this.repo.find(ns, created.id) ?? created;
    const s = await this.repo.until(ns, created.id, (c) => c.phase === 'Ready' || !c.open, waitMs);
    return s ?? created;
  }

  /** Ends the sandbox; answers its record once the controllers have ended it (or as it is after 10 s). */
  async destroy(actor: Actor, id: string): Promise<SandboxRecord> {
    const s = this.get(actor, id);
    if (!s.open && s.phase !== 'Pending' && s.phase !== 'Ready') return s;
    await this.repo.stopSandbox(actor.namespace, s.id);
    return (await this.repo.until(actor.namespace, s.id, (c) => c.phase === 'Ended' || c.phase === 'Failed', 10_000)) ?? s;
  }

  /** The agent of a sandbox that can run something now, or a 409 saying why not. */
  private target(s: SandboxRecord): AgentTarget {
    if (s.phase === 'Ready' && s.address && s.podName && !s.stopped) return { address: s.address, podName: s.podName };
    const id = s.id;
    if (s.phase === 'Ended' || s.phase === 'Failed' || s.stopped) {
      throw new DomainError(
        'conflict',
        `sandbox ${id} has ended${s.reason ? ` (${s.reason}${s.message ? `: ${s.message}` : ''})` : ''}${s.endedAt ? ` at ${s.endedAt}` : ''}; open a new one`,
      );
    }
    throw new ApiError(
      'conflict',
      `sandbox ${id} is not ready yet (${s.reason ?? 'Pending'}${s.message ? `: ${s.message}` : ''}); retry shortly`,
      {
        'Retry-After': '1',
      },
    );
  }

  /** The agent request of an exec: the platform's limits applied, the timeout held within the sandbox's lifetime. */
  private agentRequest(
    s: SandboxRecord,
    input: ExecInput,
    stdin: Buffer | undefined,
    code?: { runtime: string; code: string },
  ): AgentExecRequest {
    const timeoutS = input.timeoutSeconds ?? defaultExecTimeoutSeconds;
    const left = s.expiresAt ? new Date(s.expiresAt).getTime() - Date.now() : Infinity;
    const timeoutMs = Math.max(1, Math.min(timeoutS * 1000, left));
    const maxOutputBytes = Math.min(input.maxOutputBytes ?? this.limits.outputLimitBytes, this.limits.outputLimitBytes);
    const base = {
      ...(input.cwd ? { cwd: input.cwd } : {}),
      ...(input.env ? { env: input.env } : {}),
      ...(stdin ? { stdin: stdin.toString('base64') } : {}),
      timeoutMs: Math.round(timeoutMs),
      maxOutputBytes,
    };
    if (code) return { ...base, code: code.code, runtime: code.runtime };
    if (input.argv) return { ...base, argv: input.argv };
    return { ...base, argv: ['/bin/sh', '-c', input.command!] };
  }

  private takeExec(actor: Actor): void {
    this.execRate.take(actor.accountId);
  }

  async exec(actor: Actor, id: string, input: ExecInput): Promise<ExecAnswer> {
    const stdin = stdinOf(input);
    const s = this.get(actor, id);
    const target = this.target(s);
    this.takeExec(actor);
    return { ...(await this.runExec(s, target, this.agentRequest(s, input, stdin))), sandbox: s.id, launch: s.launch ?? null };
  }

  async execStream(actor: Actor, id: string, input: ExecInput): Promise<Readable> {
    const stdin = stdinOf(input);
    const s = this.get(actor, id);
    const target = this.target(s);
    this.takeExec(actor);
    return this.streamExec(s, target, this.agentRequest(s, input, stdin));
  }

  /** An exec, counted as the sandbox's use (and against its limit of execs at once) while it runs. */
  private async runExec(s: SandboxRecord, target: AgentTarget, req: AgentExecRequest): Promise<ExecResult> {
    const end = this.use.begin(s, req.timeoutMs + execGraceMs);
    try {
      return await this.agents.exec(target, req);
    } finally {
      end();
    }
  }

  private async streamExec(s: SandboxRecord, target: AgentTarget, req: AgentExecRequest): Promise<Readable> {
    const end = this.use.begin(s, req.timeoutMs + execGraceMs);
    try {
      const out = await this.agents.execStream(target, req);
      out.once('close', end);
      return out;
    } catch (err) {
      end();
      throw err;
    }
  }

  async upload(
    actor: Actor,
    id: string,
    path: string,
    body: Readable,
    length: number | undefined,
  ): Promise<{ path: string; size: number }> {
    let end: (() => void) | undefined;
    try {
      const s = this.get(actor, id);
      const target = this.target(s);
      end = this.use.begin(s, transferMs, false);
      return await this.agents.upload(target, path, body, length);
    } catch (err) {
      // The client may still be sending: it gets this answer, not a reset (lib/drain.ts).
      await drain(body);
      throw err;
    } finally {
      end?.();
    }
  }

  async download(actor: Actor, id: string, path: string): Promise<{ stream: Readable; size: number | undefined }> {
    const s = this.get(actor, id);
    const target = this.target(s);
    const end = this.use.begin(s, transferMs, false);
    try {
      const got = await this.agents.download(target, path);
      got.stream.once('close', end);
      return got;
    } catch (err) {
      end();
      throw err;
    }
  }

  /**
   * Code evaluated in a fresh sandbox destroyed after (POST /eval): its runtime resolved (aliases
   * accepted) and answered with the result. With `stream`, the NDJSON stream.
   */
  async evaluate(actor: Actor, code: EvalInput, input: ExecInput): Promise<ExecAnswer & { runtime: string }>;
  async evaluate(actor: Actor, code: EvalInput, input: ExecInput, stream: true): Promise<Readable>;
  async evaluate(actor: Actor, code: EvalInput, input: ExecInput, stream?: true): Promise<(ExecAnswer & { runtime: string }) | Readable> {
    const runtime = await this.d.runtimes.resolve(code.runtime);
    const open: OpenInput = { runtime, network: code.network };
    if (stream) return this.oneShot(actor, open, input, { runtime, code: code.code }, true);
    return { ...(await this.oneShot(actor, open, input, { runtime, code: code.code })), runtime };
  }

  /**
   * One exec (or one eval of code) in a fresh sandbox destroyed after: the one-shot forms. With
   * `stream`, the NDJSON stream, and the sandbox destroyed when it closes.
   */
  async oneShot(actor: Actor, open: OpenInput, input: ExecInput, code?: { runtime: string; code: string }): Promise<ExecAnswer>;
  async oneShot(
    actor: Actor,
    open: OpenInput,
    input: ExecInput,
    code: { runtime: string; code: string } | undefined,
    stream: true,
  ): Promise<Readable>;
  async oneShot(
    actor: Actor,
    open: OpenInput,
    input: ExecInput,
    code?: { runtime: string; code: string },
    stream?: true,
  ): Promise<ExecAnswer | Readable> {
    const stdin = stdinOf(input);
    this.takeExec(actor);
    const s = await this.open(actor, {
      ...open,
      maxLifetimeSeconds: Math.max(60, Math.ceil((input.timeoutSeconds ?? defaultExecTimeoutSeconds) + 60)),
      idleTimeoutSeconds: 60,
    });
    const done = () => {
      this.repo
        .stopSandbox(actor.namespace, s.id)
        .catch((err: unknown) => this.log.warn({ err, sandbox: s.id }, 'Ending a one-shot sandbox failed; its idle timeout ends it'));
    };
    try {
      if (s.phase !== 'Ready') {
        const why = s.reason ? `${s.reason}${s.message ? `: ${s.message}` : ''}` : 'not served in time';
        throw new DomainError('unavailable', `no sandbox could be started for this run (${why})`);
      }
      const target = this.target(s);
      const req = this.agentRequest(s, input, stdin, code);
      if (stream) {
        const out = await this.streamExec(s, target, req);
        out.once('close', done);
        return out;
      }
      const result = await this.runExec(s, target, req);
      done();
      return { ...result, sandbox: s.id, launch: s.launch ?? null };
    } catch (err) {
      done();
      throw err;
    }
  }
}
