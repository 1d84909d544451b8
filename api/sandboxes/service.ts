// Sandboxes for the API's handlers: open (create the Sandbox and wait, on the cache, until it is
// served), exec and files through the agent client, destroy, and the one-shot forms (eval,
// /sandbox/exec) that do all three. The account's limits are applied here: open sandboxes at once
// (429 with Retry-After) and execs per minute (a token bucket per account, per API replica).
import type { Readable } from 'node:stream';
import type { Account } from '../../lib/accounts.js';
import type { Db } from '../../lib/db/connection.js';
import { drain } from '../../lib/drain.js';
import { recordEvent } from '../../lib/events.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox, SandboxSpec } from '../../lib/resources/index.js';
import type { AgentExecRequest, ExecResult } from '../../lib/sandbox/exec.js';
import { overLimits, resourcesOf, type SandboxResources } from '../../lib/sandbox/limits.js';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import { RateLimiter } from '../middleware/rate-limit.js';
import type { AccountLock } from '../quotas.js';
import { SandboxUse } from './activity.js';
import { AgentClient, type AgentTarget } from './agent-client.js';
import { isOpen, type SandboxRepository } from './repository.js';
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

/** An exec as a tenant asks it (api/routes/sandboxes.ts validates the body into this). */
export interface ExecInput {
  command?: string | undefined;
  argv?: string[] | undefined;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  stdin?: Buffer | undefined;
  timeoutSeconds?: number | undefined;
  maxOutputBytes?: number | undefined;
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

export class SandboxService {
  private readonly agents: AgentClient;
  private readonly use: SandboxUse;
  private readonly execRate: RateLimiter;

  constructor(
    private readonly repo: SandboxRepository,
    readonly runtimes: RuntimeList,
    private readonly db: Db,
    agentKey: Buffer | undefined,
    private readonly limits: SandboxLimits,
    private readonly log: Logger,
    /** The account's lock, under which the open sandboxes are counted and one more made (api/quotas.ts). */
    private readonly lock: Pick<AccountLock, 'hold'>,
  ) {
    this.agents = new AgentClient(agentKey);
    this.use = new SandboxUse((ns, name, value) => repo.recordActivity(ns, name, value), maxExecsPerSandbox, log);
    const perMinute = limits.execPerMinute;
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

  list(account: Account, all: boolean): Sandbox[] {
    return this.repo.list(account.namespace).filter((s) => all || isOpen(s));
  }

  get(account: Account, id: string): Sandbox {
    const s = this.repo.find(account.namespace, id);
    if (!s) throw notFound(`sandbox ${id}`);
    return s;
  }

  async open(account: Account, input: OpenInput): Promise<Sandbox> {
    const runtime = await this.runtimes.resolve(input.runtime ?? 'python');
    const resources = input.resources ? resourcesOf(input.resources) : undefined;
    const over = resources && overLimits(resources);
    if (over) throw invalid(`resources over the sandbox maximum: ${over}`);
    const ns = account.namespace;
    const spec: SandboxSpec = {
      runtime,
      network: input.network === true,
      ...(input.idleTimeoutSeconds !== undefined ? { idleTimeoutSeconds: input.idleTimeoutSeconds } : {}),
      ...(input.maxLifetimeSeconds !== undefined ? { maxLifetimeSeconds: input.maxLifetimeSeconds } : {}),
      ...(resources ? { resources } : {}),
    };
    // Counted and made under the account's lock, and in the cache before the next one counts.
    const created = await this.lock.hold(account.id, async () => {
      const open = this.repo.list(ns).filter(isOpen);
      if (open.length >= this.limits.maxOpenPerAccount) {
        const next = Math.min(...open.map((s) => new Date(s.status?.idleExpiresAt ?? s.status?.expiresAt ?? Date.now() + 5000).getTime()));
        const retry = Math.max(1, Math.min(3600, Math.ceil((next - Date.now()) / 1000)));
        throw new ApiError(
          'rate_limited',
          `${open.length} sandboxes are open (at most ${this.limits.maxOpenPerAccount} per account): destroy one (DELETE /sandboxes/{id}) or retry when one ends`,
          { 'Retry-After': String(retry) },
        );
      }
      const made = await this.repo.create(ns, spec, account.id);
      await this.repo.until(ns, made.metadata.name!, () => true, 10_000);
      return made;
    });
    await recordEvent(this.db, account.id, 'sandbox.opened', created.metadata.name!, {
      sandbox: created.metadata.name,
      runtime,
      network: spec.network,
    }).catch((err: unknown) => this.log.warn({ err, sandbox: created.metadata.name }, 'Recording sandbox.opened failed'));
    const waitMs = input.waitMs ?? defaultOpenWaitMs;
    if (waitMs <= 0) return this.repo.find(ns, created.metadata.name!) ?? created;
    const s = await this.repo.until(ns, created.metadata.name!, (c) => c.status?.phase === 'Ready' || !isOpen(c), waitMs);
    return s ?? created;
  }

  /** Ends the sandbox; answers its record once the controllers have ended it (or as it is after 10 s). */
  async destroy(account: Account, id: string): Promise<Sandbox> {
    const s = this.get(account, id);
    if (!isOpen(s) && s.status?.phase !== 'Pending' && s.status?.phase !== 'Ready') return s;
    await this.repo.stopSandbox(account.namespace, s.metadata.name!);
    return (
      (await this.repo.until(
        account.namespace,
        s.metadata.name!,
        (c) => c.status?.phase === 'Ended' || c.status?.phase === 'Failed',
        10_000,
      )) ?? s
    );
  }

  /** The agent of a sandbox that can run something now, or a 409 saying why not. */
  private target(s: Sandbox): AgentTarget {
    const st = s.status;
    if (st?.phase === 'Ready' && st.address && st.podName && !s.spec.stopped) return { address: st.address, podName: st.podName };
    const id = s.metadata.name;
    if (st?.phase === 'Ended' || st?.phase === 'Failed' || s.spec.stopped) {
      throw conflict(
        `sandbox ${id} has ended${st?.reason ? ` (${st.reason}${st.message ? `: ${st.message}` : ''})` : ''}${st?.endedAt ? ` at ${st.endedAt}` : ''}; open a new one`,
      );
    }
    throw new ApiError(
      'conflict',
      `sandbox ${id} is not ready yet (${st?.reason ?? 'Pending'}${st?.message ? `: ${st.message}` : ''}); retry shortly`,
      { 'Retry-After': '1' },
    );
  }

  /** The agent request of an exec: the platform's limits applied, the timeout held within the sandbox's lifetime. */
  private agentRequest(s: Sandbox, input: ExecInput, code?: { runtime: string; code: string }): AgentExecRequest {
    const timeoutS = input.timeoutSeconds ?? defaultExecTimeoutSeconds;
    const left = s.status?.expiresAt ? new Date(s.status.expiresAt).getTime() - Date.now() : Infinity;
    const timeoutMs = Math.max(1, Math.min(timeoutS * 1000, left));
    const maxOutputBytes = Math.min(input.maxOutputBytes ?? this.limits.outputLimitBytes, this.limits.outputLimitBytes);
    const base = {
      ...(input.cwd ? { cwd: input.cwd } : {}),
      ...(input.env ? { env: input.env } : {}),
      ...(input.stdin ? { stdin: input.stdin.toString('base64') } : {}),
      timeoutMs: Math.round(timeoutMs),
      maxOutputBytes,
    };
    if (code) return { ...base, code: code.code, runtime: code.runtime };
    if (input.argv) return { ...base, argv: input.argv };
    return { ...base, argv: ['/bin/sh', '-c', input.command!] };
  }

  private takeExec(account: Account): void {
    this.execRate.take(account.id);
  }

  async exec(account: Account, id: string, input: ExecInput): Promise<ExecAnswer> {
    const s = this.get(account, id);
    const target = this.target(s);
    this.takeExec(account);
    return { ...(await this.runExec(s, target, this.agentRequest(s, input))), sandbox: s.metadata.name!, launch: s.status?.launch ?? null };
  }

  async execStream(account: Account, id: string, input: ExecInput): Promise<Readable> {
    const s = this.get(account, id);
    const target = this.target(s);
    this.takeExec(account);
    return this.streamExec(s, target, this.agentRequest(s, input));
  }

  /** An exec, counted as the sandbox's use (and against its limit of execs at once) while it runs. */
  private async runExec(s: Sandbox, target: AgentTarget, req: AgentExecRequest): Promise<ExecResult> {
    const end = this.use.begin(s, req.timeoutMs + execGraceMs);
    try {
      return await this.agents.exec(target, req);
    } finally {
      end();
    }
  }

  private async streamExec(s: Sandbox, target: AgentTarget, req: AgentExecRequest): Promise<Readable> {
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
    account: Account,
    id: string,
    path: string,
    body: Readable,
    length: number | undefined,
  ): Promise<{ path: string; size: number }> {
    let end: (() => void) | undefined;
    try {
      const s = this.get(account, id);
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

  async download(account: Account, id: string, path: string): Promise<{ stream: Readable; size: number | undefined }> {
    const s = this.get(account, id);
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
   * One exec (or one eval of code) in a fresh sandbox destroyed after: the one-shot forms. With
   * `stream`, the NDJSON stream, and the sandbox destroyed when it closes.
   */
  async oneShot(account: Account, open: OpenInput, input: ExecInput, code?: { runtime: string; code: string }): Promise<ExecAnswer>;
  async oneShot(
    account: Account,
    open: OpenInput,
    input: ExecInput,
    code: { runtime: string; code: string } | undefined,
    stream: true,
  ): Promise<Readable>;
  async oneShot(
    account: Account,
    open: OpenInput,
    input: ExecInput,
    code?: { runtime: string; code: string },
    stream?: true,
  ): Promise<ExecAnswer | Readable> {
    this.takeExec(account);
    const s = await this.open(account, {
      ...open,
      maxLifetimeSeconds: Math.max(60, Math.ceil((input.timeoutSeconds ?? defaultExecTimeoutSeconds) + 60)),
      idleTimeoutSeconds: 60,
    });
    const done = () => {
      this.repo
        .stopSandbox(account.namespace, s.metadata.name!)
        .catch((err: unknown) =>
          this.log.warn({ err, sandbox: s.metadata.name }, 'Ending a one-shot sandbox failed; its idle timeout ends it'),
        );
    };
    try {
      if (s.status?.phase !== 'Ready') {
        const why = s.status?.reason ? `${s.status.reason}${s.status.message ? `: ${s.status.message}` : ''}` : 'not served in time';
        throw new ApiError('unavailable', `no sandbox could be started for this run (${why})`, { 'Retry-After': '5' });
      }
      const target = this.target(s);
      const req = this.agentRequest(s, input, code);
      if (stream) {
        const out = await this.streamExec(s, target, req);
        out.once('close', done);
        return out;
      }
      const result = await this.runExec(s, target, req);
      done();
      return { ...result, sandbox: s.metadata.name!, launch: s.status?.launch ?? null };
    } catch (err) {
      done();
      throw err;
    }
  }
}
