// Following an app's log in the browser (GET /apps/{appID}/logs?follow=true as NDJSON, through
// follow-stream.ts). Whenever a stream ends (the network dropped, no line for a while, the tab went
// to sleep, following was paused) the next one starts from where the log was: since=<LogCursor's
// resume point> and tail=0, and the lines shown before that come again are skipped once each, as
// `svc logs -f` does (cli/logs.ts, docs/api/logs.md), so nothing is missed and nothing is shown twice.
import { api, ConsoleError } from './api.js';
import { followStream, type PauseReason } from './follow-stream.js';
import { LogCursor, logReconnectDelay, parseLogLine, splitLines, type LogLine } from './log-view.js';

export type LogState =
  | { state: 'loading' }
  | { state: 'live' }
  | { state: 'reconnecting'; error: unknown }
  | { state: 'paused'; why: PauseReason }
  | { state: 'stopped'; error: unknown };

export interface FollowLogOptions {
  app: string;
  /** Only this service's machines (an app of several). */
  service?: string | undefined;
  /** Lines per machine from before the first request. */
  tail?: number;
  onLines: (lines: LogLine[]) => void;
  onState: (state: LogState) => void;
}

export interface LogFollower {
  stop(): void;
  /** Pauses following (the stream is closed) or resumes it from where it was. */
  setPaused(paused: boolean): void;
}

/** The log sends no keep-alive: a stream with no line for this long is made again (a quiet app costs one request a minute). */
const silentMs = 60_000;

/** Why a follow must stop instead of reconnecting: the API refused (signed out, no such app or service). */
const final = (err: unknown) =>
  err instanceof ConsoleError && err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 408;

export function followLogs(opts: FollowLogOptions): LogFollower {
  const cursor = new LogCursor();
  let failures = 0;
  let first = true;
  let buffer = '';

  const take = (texts: string[]) => {
    const lines: LogLine[] = [];
    for (const text of texts) {
      const l = parseLogLine(text);
      if (l && cursor.accept(text, l)) lines.push(l);
    }
    if (lines.length > 0) opts.onLines(lines);
  };

  opts.onState({ state: 'loading' });
  return followStream({
    silentMs,
    open: async (signal) => {
      buffer = '';
      const reached = first ? undefined : cursor.resume();
      const query =
        reached !== undefined ? { follow: 'true' as const, tail: 0, since: reached } : { follow: 'true' as const, tail: opts.tail ?? 500 };
      const { data: body } = await api.GET('/apps/{appID}/logs', {
        params: { path: { appID: opts.app }, query: { ...query, ...(opts.service ? { service: opts.service } : {}) } },
        headers: { Accept: 'application/x-ndjson' },
        parseAs: 'stream',
        signal,
      });
      return body ?? undefined;
    },
    onOpen: () => {
      first = false;
      failures = 0;
      opts.onState({ state: 'live' });
    },
    onText: (text, ended) => {
      // Only a body that ended cleanly has its last line whole.
      if (ended) return take([buffer]);
      const { lines, rest } = splitLines(buffer + text);
      buffer = rest;
      take(lines);
    },
    next: (error) => (final(error) ? { stop: true } : { delayMs: logReconnectDelay(++failures) }),
    onPaused: (why) => opts.onState({ state: 'paused', why }),
    onStopped: (error) => opts.onState({ state: 'stopped', error }),
    onReconnecting: (error) => opts.onState({ state: 'reconnecting', error }),
    ended: () => new ConsoleError(0, 'the log stream ended'),
  });
}
