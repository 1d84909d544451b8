// What a page shows of a change it asks the API for: its buttons disabled while it runs, a failure
// said with what was being done (where the page asked for it), else a message of what was done. One
// change at a time per page: a new one clears the last failure and, unless it keeps it, the message.
import { useState } from 'preact/hooks';

/** A change that failed: what was being done, the error, and where the page says so. */
export interface Failure<Where> {
  doing: string;
  error: unknown;
  where: Where | undefined;
}

/** What a change that worked did, in words, and where the page says so. */
export interface Done<Where> {
  said: string;
  where: Where | undefined;
}

export interface ActionOptions<T, Where> {
  /** Said once the call worked (from its answer); none leaves the message as it is. */
  said?: string | ((answer: T) => string);
  /** Where its failure and its message are shown, on a page that shows them in more than one place. */
  where?: Where;
  /** What follows a call that worked, before the message is set (closing a confirmation, reading the list again): its failure is the change's. */
  after?: (answer: T) => void | Promise<void>;
  /** The message said before stays while it runs (else it is cleared as the change starts). */
  keepDone?: boolean;
}

export interface ActionState<Where> {
  setBusy: (busy: boolean) => void;
  setFailure: (failure: Failure<Where> | undefined) => void;
  setDone: (done: Done<Where> | undefined) => void;
}

/** Runs one change through `state`'s setters; true when it (and its `after`) worked. */
export async function runAction<T, Where>(
  state: ActionState<Where>,
  doing: string,
  call: () => Promise<T>,
  { said, where, after, keepDone = false }: ActionOptions<T, Where> = {},
): Promise<boolean> {
  state.setBusy(true);
  state.setFailure(undefined);
  if (!keepDone) state.setDone(undefined);
  try {
    const answer = await call();
    // The message once what follows is done (the list read again): a notice never stands beside
    // the row it says is gone. One that returns no promise runs in the same turn as the message.
    const more = after?.(answer);
    if (more) await more;
    if (said !== undefined) state.setDone({ said: typeof said === 'function' ? said(answer) : said, where });
    return true;
  } catch (error) {
    state.setFailure({ doing, error, where });
    return false;
  } finally {
    state.setBusy(false);
  }
}

/** A page's changes: `busy`, the last `failure` and `done`, `run` for a change, `say` for a message of the page's own. */
export function useAction<Where = never>() {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure<Where> | undefined>(undefined);
  const [done, setDone] = useState<Done<Where> | undefined>(undefined);
  const run = <T>(doing: string, call: () => Promise<T>, options?: ActionOptions<T, Where>) =>
    runAction({ setBusy, setFailure, setDone }, doing, call, options);
  const say = (said: string, where?: Where) => setDone({ said, where });
  return { busy, failure, done, run, say };
}
