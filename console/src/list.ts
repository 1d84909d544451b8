// The apps list's search and paging, in memory: the account's apps are fetched once (GET /apps,
// 500 a page) and only the page shown is rendered, so a thousand apps stay as quick as ten. Pure:
// unit-tested.

export const pageSize = 25;

/** Apps whose name contains the query (case-insensitive, spaces ignored). */
export function filterByName<T extends { name: string }>(apps: readonly T[], query: string): T[] {
  const q = query.trim().toLowerCase();
  return q ? apps.filter((a) => a.name.includes(q)) : [...apps];
}

/** Page `page` (1-based, clamped) of `items`, and where it is. */
export function pageOf<T>(
  items: readonly T[],
  page: number,
  size = pageSize,
): { items: T[]; page: number; pages: number; first: number; last: number } {
  const pages = Math.max(1, Math.ceil(items.length / size));
  const p = Math.min(Math.max(1, Math.floor(page) || 1), pages);
  const start = (p - 1) * size;
  const slice = items.slice(start, start + size);
  return { items: slice, page: p, pages, first: slice.length ? start + 1 : 0, last: start + slice.length };
}
