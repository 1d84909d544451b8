// The loop both live views share (follow-events.ts, follow-logs.ts): a streamed GET read with fetch
// (EventSource cannot send X-Svc-Console, without which the API refuses the session cookie, decision
// 0031), made again whenever it ends, and closed while it cannot be seen. A stream that says nothing
// for `silentMs` is taken as dropped; a sleeping tab, a pause asked for and an offline browser keep
// no connection, and waking, resuming or coming online starts the next one at once. What to ask
// for (the resume point) and what to make of the text are the caller's.

/** Why no stream runs now: the caller's pause, or the tab is hidden. */
export type PauseReason = 'asked' | 'hidden';

export interface StreamLoop {
  /** No stream from now on: closes the one running and wakes no more. */
  stop(): void;
  /** Closes the running stream (pausing), or wakes the loop to start one (resuming). */
  setPaused(paused: boolean): void;
}

export interface StreamLoopOptions {
  /** Opens one stream (the fetch, with `signal`); its body. */
  open(signal: AbortSignal): Promise<ReadableStream<BufferSource> | undefined>;
  /** The stream was answered. */
  onOpen(): void;
  /** Text as it arrives; `ended` once the body ended cleanly (the last piece is then whole). */
  onText(text: string, ended: boolean): void;
  /** A stream that says nothing for this long is made again. */
  silentMs: number;
  /** After a stream ended or broke (`opened`: it had been answered): stop following, or wait this long before the next. */
  next(error: unknown, opened: boolean): { stop: true } | { delayMs: number };
  onPaused(why: PauseReason): void;
  onStopped(error: unknown): void;
  onReconnecting(error: unknown): void;
  /** What the stream's silent end is called (an error for onReconnecting). */
  ended(): Error;
}

const hidden = () => document.visibilityState === 'hidden';

/** Starts the loop after `before` (a first read), which stops it when it throws. */
export function followStream(o: StreamLoopOptions, before: () => Promise<void> = async () => undefined): StreamLoop {
  let stopped = false;
  let paused = false;
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

  /** One stream, read to its end; true once it was answered. Throws when it could not start or broke. */
  const stream = async (answered: () => void): Promise<void> => {
    const controller = new AbortController();
    current = controller;
    let silence = setTimeout(() => controller.abort(), o.silentMs);
    try {
      const body = await o.open(controller.signal);
      if (!body) throw o.ended();
      answered();
      o.onOpen();
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return o.onText('', true);
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), o.silentMs);
        o.onText(value, false);
      }
    } finally {
      clearTimeout(silence);
      controller.abort();
      if (current === controller) current = undefined;
    }
  };

  const run = async () => {
    try {
      await before();
    } catch (err) {
      o.onStopped(err);
      return;
    }
    while (!stopped) {
      if (paused || hidden()) {
        o.onPaused(paused ? 'asked' : 'hidden');
        await sleep(24 * 3600_000);
        continue;
      }
      let opened = false;
      let error: unknown = o.ended();
      try {
        await stream(() => (opened = true));
      } catch (err) {
        error = err;
      }
      if (stopped) return;
      const then = o.next(error, opened);
      if ('stop' in then) {
        o.onStopped(error);
        return;
      }
      if (paused || hidden()) continue;
      o.onReconnecting(error);
      await sleep(then.delayMs);
    }
  };

  const onVisibility = () => {
    if (hidden()) current?.abort();
    else wake?.();
  };
  // Offline, the stream is dead even if no error says so yet; back online, resume at once.
  const onOffline = () => current?.abort();
  const onOnline = () => wake?.();
  document.addEventListener('visibilitychange', onVisibility);
  addEventListener('offline', onOffline);
  addEventListener('online', onOnline);
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
