// Parsed pages keyed by file identity. An artifact's files never change under a running machine,
// but keying on size and mtime keeps the cache honest when a site root is edited in place (dev).
import { readFile } from 'node:fs/promises';
import type { Found } from './static-site.js';

export class PageCache<T> {
  private readonly entries = new Map<string, { value: T; cost: number }>();
  private total = 0;

  constructor(
    private readonly build: (source: string, found: Found) => T,
    private readonly cost: (value: T, source: string) => number = (_v, source) => source.length * 2,
    private readonly budget = 32 * 1024 * 1024,
  ) {}

  async get(found: Found): Promise<T> {
    const key = `${found.file}\0${found.size}\0${found.mtimeMs}`;
    const hit = this.entries.get(key);
    if (hit) {
      // Refresh its place: eviction takes the least recently used first.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const source = await readFile(found.file, 'utf8');
    const value = this.build(source, found);
    const cost = this.cost(value, source);
    if (cost <= this.budget / 4) {
      this.entries.set(key, { value, cost });
      this.total += cost;
      for (const [k, e] of this.entries) {
        if (this.total <= this.budget) break;
        this.entries.delete(k);
        this.total -= e.cost;
      }
    }
    return value;
  }
}
