// Pod addresses: one loopback address per pod, from 127.<octet>.0.1 to 127.<octet>.255.254. Every
// address of 127.0.0.0/8 reaches this machine, so a process bound to its pod's address answers
// there, and EndpointSlices built from pod IPs point at something real.
export class IpPool {
  private readonly byPod = new Map<string, string>();
  private readonly used = new Set<string>();
  private next = 1;

  constructor(private readonly octet: number) {}

  /** The pod's address: the one it had (after an agent restart) when still free, else a new one. */
  allocate(podUid: string, previous?: string): string {
    const have = this.byPod.get(podUid);
    if (have) return have;
    const prefix = `127.${this.octet}.`;
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
