// What node's resolver errors mean: the one place that tells "the name has no such records" (a fact
// about the name: an empty answer) from a failure of DNS itself (to be retried or reported).

/** ENODATA (the name has no records of the type), ENOTFOUND and NXDOMAIN (no such name). */
const noRecordCodes = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

/** Whether a resolver's error says the name has no such records, rather than that DNS failed. */
export function isNoRecords(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && noRecordCodes.has(code);
}
