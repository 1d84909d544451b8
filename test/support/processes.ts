// The processes running on this host (the tests run on the nodes' host), read from /proc.
import { readdir } from 'node:fs/promises';

/** The ids of the processes running now. */
export async function processIds(): Promise<string[]> {
  return (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
}
