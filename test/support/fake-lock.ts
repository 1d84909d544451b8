// The account lock of the quota checks (api/quotas.ts), in memory: it tells whether a step
// ran while held and how many steps held it, which is what the action tests assert.

export class FakeLock {
  held = false;
  holds = 0;
  async hold<T>(_accountId: string, step: () => Promise<T>): Promise<T> {
    this.holds += 1;
    this.held = true;
    try {
      return await step();
    } finally {
      this.held = false;
    }
  }
}
