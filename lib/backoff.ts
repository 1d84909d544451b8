// Exponential back-off without jitter: the wait after the attempt-th failure in a row, doubling
// from the first wait up to a cap. What the mail outbox, the deploy recorder and the domain renewer
// wait between tries (the webhook deliverer and the controllers' queue add jitter of their own).

/** The wait after the `attempt`-th failure in a row (1 for the first): `firstMs` doubling, at most `maxMs`. */
export function doublingDelayMs(attempt: number, firstMs: number, maxMs: number): number {
  return Math.min(firstMs * 2 ** Math.max(0, attempt - 1), maxMs);
}
