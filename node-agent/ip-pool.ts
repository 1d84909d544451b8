// Pod addresses: one per pod, from <prefix>.0.1 to <prefix>.255.254 (a /16), skipping reserved ones.
export class IpPool {
  private readonly byPod = new Map<string, string>();
  private readonly used = new Set<string>();
  private next = 1;

  constructor(
    private readonly prefix: string,
    reserved: string[] = [],
  ) {
    for (const ip of reserved) this.used.add(ip);
  }

  /** The pod's address: the one it had (after an agent restart) when still free, else a new one. */
  allocate(podUid: string, previous?: string): string {
    const have = this.byPod.get(podUid);
    if (have) return have;
    const prefix = `${this.prefix}.`;
    let ip = previous?.startsWith(prefix) && !this.used.has(previous) ? previous : undefined;
    for (let tries = 0; !ip && tries < 65_534; tries++) {
      const n = this.next;
      this.next = (this.next % 65_534) + 1;
      const candidate = `${prefix}${n >> 8}.${n & 255}`;
      if ((n & 255) !== 0 && (n & 255) !== 255 && !this.used.has(candidate)) ip = candidate;
    }
    if (!ip) throw new Error('pod address pool exhausted');
    this.used.add(ip);
    this.byPod.set(podUid, ip);
    return ip;
  }

  release(podUid: string): void {
    const ip = this.byPod.get(podUid);
    if (ip) this.used.delete(ip);
    this.byPod.delete(podUid);
  }
}
