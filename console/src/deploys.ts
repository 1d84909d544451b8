// The deploys and previews pages, the pure parts: a deploy's status and origin in words, which
// deploys may be rolled back to (the API's rule: one that went live, and is not the one serving),
// the build a deploy came from, an expiry in words, and a build log kept to its newest part as
// chunks of a followed stream arrive. No DOM: unit-tested.
import type { Tone } from './status.js';

/** What these functions read of a deploy (GET /apps/{appID}/deploys, GET /deploys/{deployID}). */
export interface DeployFacts {
  id: string;
  status: 'pending' | 'building' | 'deploying' | 'live' | 'failed';
  reason: string | null;
  current: boolean;
  origin: string;
  origin_deploy: string | null;
  image: string | null;
  summary: Record<string, unknown>;
  created_by: string | null;
}

/** A deploy not decided yet: the page asks again until none is. */
export function inFlight(d: Pick<DeployFacts, 'status'>): boolean {
  return d.status === 'pending' || d.status === 'building' || d.status === 'deploying';
}

/** A deploy's status in words: `live` is said apart for the one serving now and one that served before. */
export function deployStatusInWords(d: Pick<DeployFacts, 'status' | 'current' | 'reason'>): { text: string; tone: Tone } {
  switch (d.status) {
    case 'pending':
      return { text: 'Waiting to start', tone: 'busy' };
    case 'building':
      return { text: 'Building', tone: 'busy' };
    case 'deploying':
      return { text: 'Deploying', tone: 'busy' };
    case 'live':
      return d.current ? { text: 'Live: serving now', tone: 'ok' } : { text: 'Served before', tone: 'idle' };
    case 'failed':
      return { text: d.reason ? `Failed: ${d.reason}` : 'Failed', tone: 'bad' };
  }
}

/** Where a deploy came from, in words (the CLI's `origin of origin_deploy`, said out). */
export function originInWords(d: Pick<DeployFacts, 'origin' | 'origin_deploy' | 'image' | 'summary' | 'created_by'>): string {
  const of = d.origin_deploy ? ` of deploy ${d.origin_deploy}` : '';
  switch (d.origin) {
    case 'files':
      return 'files sent with the request';
    case 'tarball':
      return 'an uploaded archive';
    case 'image':
      return d.image ? `image ${d.image}` : 'an image';
    case 'compose':
      return 'a compose file';
    case 'rollback':
      return `a rollback${d.origin_deploy ? ` to deploy ${d.origin_deploy}` : ''}`;
    case 'fork': {
      const from = typeof d.summary.forked_from === 'string' ? ` of app ${d.summary.forked_from}` : '';
      return `a fork${from}${of}`;
    }
    case 'preview':
      return `a preview${of}`;
    case 'build': {
      const build = buildOf(d);
      return build ? `build ${build}` : 'a build';
    }
    default:
      return `${d.origin}${of}`;
  }
}

/**
 * The build whose output a deploy is, if it came from one: the deploy's summary names it (`build`;
 * a rollback to such a deploy keeps its summary), else its author (`build:<id>`).
 */
export function buildOf(d: Pick<DeployFacts, 'summary' | 'created_by'>): string | undefined {
  if (typeof d.summary.build === 'string' && d.summary.build) return d.summary.build;
  const by = d.created_by?.startsWith('build:') ? d.created_by.slice('build:'.length) : '';
  return by || undefined;
}

/**
 * What a deploy's summary says for people (file count, bytes, the kind's why, what a rollback
 * returned to), as name and value in words; nested records and the build (shown with its log) are left out.
 */
export function summaryFacts(summary: Record<string, unknown>): Array<[string, string]> {
  const facts: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(summary)) {
    if (k === 'build') continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      const text = String(v);
      if (text) facts.push([k.replace(/_/g, ' '), text]);
    }
  }
  return facts;
}

/**
 * Whether "Roll back to this" is offered: the API rolls back only to a deploy that went live
 * (api/deploys/actions.ts), and the one serving now needs none.
 */
export function canRollBack(d: Pick<DeployFacts, 'status' | 'current'>): boolean {
  return d.status === 'live' && !d.current;
}

/** The deploy serving now, if the list has it. */
export function liveDeploy<D extends Pick<DeployFacts, 'current'>>(deploys: readonly D[]): D | undefined {
  return deploys.find((d) => d.current);
}

/**
 * Pages of deploys (newest first, paged by `before`) put together: a deploy already listed is
 * replaced by its newer answer, so a page asked for again after a change never shows one twice.
 */
export function mergeDeploys<D extends { id: string }>(shown: readonly D[], page: readonly D[]): D[] {
  const fresh = new Map(page.map((d) => [d.id, d]));
  const kept = shown.map((d) => fresh.get(d.id) ?? d);
  const known = new Set(shown.map((d) => d.id));
  return [...kept, ...page.filter((d) => !known.has(d.id))];
}

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;

/** An expiry in words, relative to `now`: "expires in 3 days", "expired", "no expiry". */
export function expiryInWords(expiresAt: string | null | undefined, now: Date = new Date()): string {
  if (!expiresAt) return 'no expiry';
  const left = new Date(expiresAt).getTime() - now.getTime();
  if (Number.isNaN(left)) return 'no expiry';
  if (left <= 0) return 'expired';
  if (left < minute) return 'expires in less than a minute';
  if (left < 90 * minute) return `expires in ${plural(Math.round(left / minute), 'minute')}`;
  if (left < 2 * day) return `expires in ${plural(Math.round(left / hour), 'hour')}`;
  return `expires in ${plural(Math.round(left / day), 'day')}`;
}

/** Whether a build's log is still being written, so it is followed (`?follow=true`) rather than read once. */
export function buildRunning(status: string): boolean {
  return status === 'queued' || status === 'building';
}

/**
 * Whether a build is not done with yet: running, or succeeded with its deploy asked for and not
 * made yet. The page asks about such builds again, and reads the deploys when none is left.
 */
export function buildPending(b: { status: string; deploy: boolean; deploy_id: string | null; deploy_error: string | null }): boolean {
  return buildRunning(b.status) || (b.status === 'succeeded' && b.deploy && b.deploy_id === null && b.deploy_error === null);
}

/** A build's status in words. */
export function buildStatusInWords(b: { status: string; reason: string | null; message: string | null }): { text: string; tone: Tone } {
  switch (b.status) {
    case 'queued':
      return { text: 'Queued', tone: 'busy' };
    case 'building':
      return { text: 'Building', tone: 'busy' };
    case 'succeeded':
      return { text: b.reason === 'Reused' ? 'Succeeded (an earlier build’s output reused)' : 'Succeeded', tone: 'ok' };
    case 'canceled':
      return { text: 'Canceled', tone: 'idle' };
    case 'failed':
      return { text: `Failed${b.message ? `: ${b.message}` : b.reason ? `: ${b.reason}` : ''}`, tone: 'bad' };
    default:
      return { text: b.status, tone: 'busy' };
  }
}

/** A build log as the page shows it: its newest `maxLogChars` at most, and how much earlier text was left out. */
export interface LogView {
  text: string;
  /** Characters of the log's start no longer shown. */
  dropped: number;
}

export const emptyLog: LogView = { text: '', dropped: 0 };

/** The most of a log the page keeps (the API keeps a build's last 4 MiB). */
export const maxLogChars = 1_000_000;

/**
 * The log with a chunk of the stream added. Past `max`, the oldest text goes, cut at a line's
 * start so no line is shown half.
 */
export function appendLog(log: LogView, chunk: string, max = maxLogChars): LogView {
  if (!chunk) return log;
  const text = log.text + chunk;
  if (text.length <= max) return { text, dropped: log.dropped };
  let cut = text.length - max;
  const newline = text.indexOf('\n', cut - 1);
  cut = newline === -1 || newline + 1 >= text.length ? cut : newline + 1;
  return { text: text.slice(cut), dropped: log.dropped + cut };
}
