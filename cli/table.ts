// The CLI's tables: a header row and rows, columns padded to their widest cell, two spaces apart.
export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}

/** Bytes as people read them: `512 B`, `8 KiB`, `1.5 MiB`, `64 MiB` (binary units, one decimal below 10). */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  if (i === 0) return `${n} B`;
  const shown = v < 10 ? Math.round(v * 10) / 10 : Math.round(v);
  return `${shown} ${units[i]}`;
}

/** An amount in minor units with its currency's decimals: 2598 USD is "25.98 USD", 1500 JPY "1500 JPY". */
export function moneyText(minor: number, currency: string): string {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    // A code Intl does not know: two decimals, as most currencies have.
  }
  return `${(minor / 10 ** digits).toFixed(digits)} ${currency}`;
}
