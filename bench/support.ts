// What the benchmarks share: percentiles, bounded parallelism, and a throwaway database.
import { randomBytes } from 'node:crypto';
import { connect, type Db } from '../lib/db/connection.js';

/** The p-th percentile of ascending `sorted` (nearest rank). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs work(0..n-1) with at most `concurrency` in flight. */
export async function inParallel(n: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

/** A fresh database on the test server; drop() removes it. */
export async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.SVC_TEST_PG_ADMIN_URL ?? 'postgres://svc@127.0.0.1:55432/postgres';
  const name = `svc_bench_${randomBytes(4).toString('hex')}`;
  const admin: Db = connect(adminUrl, { poolMax: 1 });
  await admin.raw('CREATE DATABASE ??', [name]);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
      await admin.destroy();
    },
  };
}
