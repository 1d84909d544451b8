// The events page's feed, the pure parts: reading Server-Sent Events from a stream's text, and
// merging what arrives into the list shown, newest first, so that a reconnection (after a dropped
// connection or a sleeping tab) that resumes from the last id seen shows every event once: ids
// increase within an account (docs/api/events.md), so the last id seen is the cursor and anything
// at or below it is already shown. Unit-tested.
import type { AccountEvent } from './api.js';

/** How many events the page keeps (the newest). */
export const maxShown = 200;

export interface SseFrame {
  id?: string;
  event: string;
  data: string;
  retry?: number;
}

/**
 * The complete frames at the start of `buffer` (a frame ends with a blank line), and the text left
 * over for the next chunk. Comments (`: keep-alive`) and frames with no data are dropped, except a
 * `retry:`, which is kept as a frame of its own.
 */
export function readFrames(buffer: string): { frames: SseFrame[]; rest: string } {
  // A chunk may end between the \r and the \n of one line end: that \r waits for the next chunk.
  const held = buffer.endsWith('\r') ? '\r' : '';
  const text = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, '\n');
  const blocks = text.split('\n\n');
  const rest = (blocks.pop() ?? '') + held;
  const frames: SseFrame[] = [];
  for (const block of blocks) {
    let id: string | undefined;
    let event = 'message';
    let retry: number | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
    }
    if (data.length > 0 || retry !== undefined)
      frames.push({ ...(id === undefined ? {} : { id }), event, data: data.join('\n'), ...(retry === undefined ? {} : { retry }) });
  }
  return { frames, rest };
}

export interface Feed {
  /** Newest first, at most maxShown. */
  events: AccountEvent[];
  /** The highest id seen: where a reconnection resumes (`after`). 0 before any. */
  lastId: number;
}

export const emptyFeed: Feed = { events: [], lastId: 0 };

/**
 * The feed with `incoming` added: an event at or below the last id seen is one already shown (a
 * reconnection's replay, or a listing that overlaps the stream) and is skipped; the rest go on top,
 * newest first.
 */
export function mergeEvents(feed: Feed, incoming: readonly AccountEvent[], max = maxShown): Feed {
  const fresh = incoming.filter((e) => e.id > feed.lastId).sort((a, b) => a.id - b.id);
  const unique = fresh.filter((e, i) => i === 0 || e.id !== fresh[i - 1]!.id);
  if (unique.length === 0) return feed;
  const newestFirst = [...unique].reverse();
  return { events: [...newestFirst, ...feed.events].slice(0, max), lastId: newestFirst[0]!.id };
}

/** How long to wait before reconnecting after `failures` failed attempts in a row: the server's `retry`, doubling to a minute. */
export function reconnectDelay(failures: number, retryMs = 3000): number {
  return Math.min(60_000, retryMs * 2 ** Math.max(0, failures - 1));
}

/** An event's one-line summary: what happened to what, from its kind and data. */
export function eventSummary(e: AccountEvent): string {
  const fields = Object.entries(e.data)
    .filter(([, v]) => v !== null && v !== undefined && (typeof v !== 'object' || (Array.isArray(v) && v.length > 0)))
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`);
  return fields.join('; ');
}
