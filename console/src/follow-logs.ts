// Following an app's log in the browser (GET /apps/{appID}/logs?follow=true as NDJSON, read with
// fetch as follow-events.ts reads the event stream: EventSource cannot send X-Svc-Console). Whenever
// a stream ends (the network dropped, no line for a while, the tab went to sleep, following was
// paused) the next one starts from where the log was: since=<LogCursor's resume point> and tail=0,
// and the lines shown before that come again are skipped once each, as `svc logs -f` does
// (cli/logs.ts, docs/api/logs.md), so nothing is missed and nothing is shown twice.
import { api, ConsoleError } from './api.js';
import { LogCursor, logReconnectDelay, parseLogLine, splitLines, type LogLine } from './log-view.js';

export type LogState =
  | { state: 'loading' }
  | { state: 'live' }
  | { state: 'reconnecting'; error: unknown }
  | { state: 'paused'; why: 'hidden' | 'asked' }
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

const hidden = () => document.visibilityState === 'hidden';

/** Why a follow must stop instead of reconnecting: the API refused (signed out, no such app or service). */
const final = (err: unknown) =>
  err instanceof ConsoleError && err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 408;

export function followLogs(opts: FollowLogOptions): LogFollower {
  const cursor = new LogCursor();
  let stopped = false;
  let paused = false;
  let failures = 0;
  let first = true;
  let current: AbortController | undefined;
  let wake: (() => void) | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const stream = async () => {
    const controller = new AbortController();
    current = controller;
    let silence = setTimeout(() => controller.abort(), silentMs);
    const reached = first ? undefined : cursor.resume();
    const query =
      reached !== undefined ? { follow: 'true' as const, tail: 0, since: reached } : { follow: 'true' as const, tail: opts.tail ?? 500 };
    try {
      const { data: body } = await api.GET('/apps/{appID}/logs', {
        params: { path: { appID: opts.app }, query: { ...query, ...(opts.service ? { service: opts.service } : {}) } },
        headers: { Accept: 'application/x-ndjson' },
        parseAs: 'stream',
        signal: controller.signal,
      });
      if (!body) throw new ConsoleError(0, 'the log answered with no body');
      first = false;
      failures = 0;
      opts.onState({ state: 'live' });
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      const take = (texts: string[]) => {
        const lines: LogLine[] = [];
        for (const text of texts) {
          const l = parseLogLine(text);
          if (l && cursor.accept(text, l)) lines.push(l);
        }
        if (lines.length > 0) opts.onLines(lines);
      };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          // Only a body that ended cleanly has its last line whole.
          take([buffer]);
          return;
        }
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), silentMs);
        const { lines, rest } = splitLines(buffer + value);
        buffer = rest;
        take(lines);
      }
    } finally {
      clearTimeout(silence);
      controller.abort();
      if (current === controller) current = undefined;
    }
  };

  const run = async () => {
    while (!stopped) {
      if (paused || hidden()) {
        opts.onState({ state: 'paused', why: paused ? 'asked' : 'hidden' });
        await sleep(24 * 3600_000);
        continue;
      }
      let error: unknown = new ConsoleError(0, 'the log stream ended');
      try {
        await stream();
      } catch (err) {
        error = err;
      }
      if (stopped) return;
      if (final(error)) {
        opts.onState({ state: 'stopped', error });
        return;
      }
      if (paused || hidden()) continue;
      failures++;
      opts.onState({ state: 'reconnecting', error });
      await sleep(logReconnectDelay(failures));
    }
  };

  const onVisibility = () => {
    if (hidden()) current?.abort();
    else wake?.();
  };
  const onOffline = () => current?.abort();
  const onOnline = () => wake?.();
  document.addEventListener('visibilitychange', onVisibility);
  addEventListener('offline', onOffline);
  addEventListener('online', onOnline);
  opts.onState({ state: 'loading' });
  void run();
  return {
    stop() {
      stopped = true;
      document.removeEventListener('visibilitychange', onVisibility);
      removeEventListener('offline', onOffline);
      removeEventListener('online', onOnline);
      current?.abort();
      wake?.();
    },
    setPaused(p: boolean) {
      paused = p;
      if (p) current?.abort();
      else wake?.();
    },
  };
}
