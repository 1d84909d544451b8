// The errors of the platform's domain, raised by repositories and actions: what went wrong in the
// platform's terms, not HTTP's. The API maps them to its answers in one place
// (api/middleware/errors.ts); other processes log them.

export type DomainErrorKind = 'not_found' | 'conflict' | 'invalid' | 'unavailable';

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
