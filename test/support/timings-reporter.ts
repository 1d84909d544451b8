// A Node test runner reporter (hack/test.sh adds it beside `spec`) that prints, once every file has
// run, how long each test file took, slowest first, so the next slow file is visible in CI's tail.
// A file's time is the sum of its top-level tests and suites (nesting 0), which is what the runner
// reports per file; the runner's own start-up per file is not in it.

interface TestEvent {
  type: string;
  data?: { nesting?: number; file?: string; name?: string; details?: { duration_ms?: number } };
}

export function timingsTable(perFile: Map<string, { ms: number; failed: boolean }>): string {
  const rows = [...perFile].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((sum, [, r]) => sum + r.ms, 0);
  const seconds = (ms: number) => (ms / 1000).toFixed(1).padStart(8);
  const lines = rows.map(([file, r]) => `${seconds(r.ms)} s  ${r.failed ? '✖' : ' '} ${file}`);
  return ['', `==== test: time per file (${rows.length} files, ${(total / 60_000).toFixed(1)} min in all) ====`, ...lines, ''].join('\n');
}

export default async function* timings(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const perFile = new Map<string, { ms: number; failed: boolean }>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { nesting, file, details } = event.data ?? {};
    if (nesting !== 0 || !file) continue;
    const name = file.replace(`${process.cwd()}/`, '');
    const row = perFile.get(name) ?? { ms: 0, failed: false };
    row.ms += details?.duration_ms ?? 0;
    row.failed ||= event.type === 'test:fail';
    perFile.set(name, row);
  }
  if (perFile.size > 1) yield timingsTable(perFile);
}
