/**
 * Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`;
 * `detail` says what was last seen, appended to that failure.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  {
    timeoutMs = 30_000,
    intervalMs = 200,
    detail,
  }: { timeoutMs?: number; intervalMs?: number; detail?: () => string | Promise<string> } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const error = lastError instanceof Error ? `: last error ${lastError.message}` : '';
      const seen = detail ? `; ${await detail()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${error}${seen}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
