// Reads of HTML data bindings, kept in this process until the app's data changes: most reads of a
// page's list are the same query many visitors make, and PostgreSQL's answer costs a millisecond of
// this process's time (knex, row parsing) where the copy costs microseconds. Correct only while
// this process hears every change: live.ts's LISTEN connection invalidates an app at each
// announcement and turns the cache off (cleared) while it is down. A read that was under way when a
// change was heard is not kept (the app's generation moved), and a write made here invalidates at
// once, before its answer, so the writer's next read sees it even before the announcement returns.
/** Entries kept per app, and apps kept, before the oldest go. */
const perApp = 256;
const maxApps = 10_000;

interface AppEntries {
  generation: number;
  entries: Map<string, unknown>;
}

export class ReadCache {
  private readonly apps = new Map<string, AppEntries>();
  private on = false;

  /** Turns the cache on (the change announcements are heard) or off and empty (they may be missed). */
  enable(on: boolean): void {
    this.on = on;
    if (!on) this.apps.clear();
  }

  /** The app's generation now: pass it to set() with the value read after it. */
  generation(app: string): number {
    return this.apps.get(app)?.generation ?? 0;
  }

  get<T>(app: string, key: string): T | undefined {
    if (!this.on) return undefined;
    return this.apps.get(app)?.entries.get(key) as T | undefined;
  }

  /** Keeps `value`, read when the app's generation was `generation`, unless a change was heard since. */
  set(app: string, key: string, generation: number, value: unknown): void {
    if (!this.on) return;
    let a = this.apps.get(app);
    if (!a) {
      if (this.apps.size >= maxApps) this.apps.delete(this.apps.keys().next().value!);
      this.apps.set(app, (a = { generation: 0, entries: new Map() }));
    }
    if (a.generation !== generation) return;
    if (a.entries.size >= perApp) a.entries.delete(a.entries.keys().next().value!);
    a.entries.set(key, value);
  }

  /** The app's data changed: nothing read before counts. */
  invalidate(app: string): void {
    const a = this.apps.get(app);
    if (a) {
      a.generation++;
      a.entries.clear();
    } else if (this.on) {
      // A read under way for an app not cached yet must not be kept either.
      this.apps.set(app, { generation: 1, entries: new Map() });
    }
  }

  /** Reads through the cache: `read` runs on a miss, and its answer is kept if no change came meanwhile. */
  async through<T>(app: string, key: string, read: () => Promise<T>): Promise<T> {
    const hit = this.get<T>(app, key);
    if (hit !== undefined) return hit;
    const generation = this.generation(app);
    const value = await read();
    this.set(app, key, generation, value);
    return value;
  }
}
