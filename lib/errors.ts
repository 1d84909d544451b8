// The errors of the platform's domain, raised by repositories and actions: what went wrong in the
// platform's terms, not HTTP's. The API maps them to its answers in one place
// (api/middleware/errors.ts); other processes log them.

export type DomainErrorKind = 'not_found' | 'conflict' | 'invalid' | 'unavailable' | 'quota_exceeded';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    /** The underlying failure, for logs; never shown to clients. */
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/**
 * An error as one line for a stored `last_error` and logs: its message and code (socket and
 * protocol errors carry one), with its cause's message when asked, whitespace collapsed, at most
 * 500 characters. Never more of a request than the error itself says.
 */
export function errorLine(err: unknown, opts: { withCause?: boolean } = {}): string {
  let text = String(err);
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const cause = opts.withCause && err.cause instanceof Error ? err.cause.message : '';
    text = `${err.message}${typeof code === 'string' ? ` (${code})` : ''}${cause ? `: ${cause}` : ''}`;
  }
  return text.replace(/\s+/g, ' ').slice(0, 500);
}
