// Following the account's events in the browser: the newest of the log (GET /account/events with
// order=newest, one page), then the live stream (GET /events?follow=true as Server-Sent Events) from
// the last id seen, through follow-stream.ts. Whenever a stream ends (the network dropped, the
// server closed it, the tab went to sleep) the next one starts `after` the last id seen: the API
// sends every event after it, none twice (docs/api/events.md), and mergeEvents drops any repeat.
import { api, data, ConsoleError, type AccountEvent } from './api.js';
import { maxShown, readFrames, reconnectDelay } from './event-feed.js';
import { followStream } from './follow-stream.js';

export type FeedState =
  | { state: 'loading' }
  | { state: 'live' }
  | { state: 'reconnecting'; error: unknown }
  | { state: 'paused' }
  | { state: 'stopped'; error: unknown };

export interface FollowOptions {
  onEvents: (events: AccountEvent[]) => void;
  onState: (state: FeedState) => void;
  /** The log no longer holds what came after the cursor (410 gone): the feed resumes from the oldest kept. */
  onGone: (message: string) => void;
}

/** A stream that says nothing (not even the 15 s keep-alive) for this long is taken as dropped. */
const silentMs = 45_000;

/** The newest `keep` events of the log (at most 1,000: one page), oldest first as the feed holds them. */
async function newestEvents(keep: number): Promise<{ events: AccountEvent[]; lastId: number }> {
  const page = await data(api.GET('/account/events', { params: { query: { order: 'newest', limit: Math.min(keep, 1000) } } }));
  const events = [...page.events].reverse();
  return { events, lastId: events.length ? events[events.length - 1]!.id : 0 };
}

/** Starts following; the function returned stops it. */
export function followEvents(opts: FollowOptions): () => void {
  let cursor = 0;
  let failures = 0;
  let retryMs = 3000;
  let buffer = '';

  /** The frames in a piece of the stream: events passed on, `retry` kept, `gone` moving the cursor, `error` ending the stream. */
  const take = (text: string) => {
    const { frames, rest } = readFrames(buffer + text);
    buffer = rest;
    const events: AccountEvent[] = [];
    for (const frame of frames) {
      if (frame.retry !== undefined) retryMs = frame.retry;
      if (!frame.data) continue;
      if (frame.event === 'gone') {
        const gone = JSON.parse(frame.data) as { error: string; after: number };
        cursor = gone.after;
        opts.onGone(gone.error);
      } else if (frame.event === 'error') {
        // The API ends the stream after saying why (the token revoked or expired): the next
        // connection's answer (401 signs out) says whether it is over.
        throw new ConsoleError(0, (JSON.parse(frame.data) as { error: string }).error);
      } else {
        const event = JSON.parse(frame.data) as AccountEvent;
        cursor = Math.max(cursor, event.id);
        events.push(event);
      }
    }
    if (events.length > 0) opts.onEvents(events);
  };

  const loop = followStream(
    {
      silentMs,
      open: async (signal) => {
        buffer = '';
        const { data: body } = await api.GET('/events', {
          params: { query: { follow: 'true', after: cursor } },
          headers: { Accept: 'text/event-stream' },
          parseAs: 'stream',
          signal,
        });
        return body ?? undefined;
      },
      onOpen: () => opts.onState({ state: 'live' }),
      onText: (text) => take(text),
      // The session is over (api.ts has told the shell, which shows sign-in); otherwise again: after
      // the server's `retry` when the last stream was answered, backing off when it was not.
      next: (error, opened) => {
        if (error instanceof ConsoleError && error.status === 401) return { stop: true };
        failures = opened ? 1 : failures + 1;
        return { delayMs: reconnectDelay(failures, retryMs) };
      },
      onPaused: () => opts.onState({ state: 'paused' }),
      onStopped: (error) => opts.onState({ state: 'stopped', error }),
      onReconnecting: (error) => opts.onState({ state: 'reconnecting', error }),
      ended: () => new ConsoleError(0, 'the event stream ended'),
    },
    async () => {
      const first = await newestEvents(maxShown);
      cursor = first.lastId;
      opts.onEvents(first.events);
    },
  );
  return () => loop.stop();
}
