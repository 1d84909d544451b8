// Pod networking. With `netns` (the default as root) every pod gets its own network namespace,
// joined to a bridge on the host by a veth pair, with an address from the pod subnet: addresses
// that EndpointSlices accept (they refuse loopback ones) and that the host reaches directly, as
// pods on a cluster network. With `loopback` (no root) pods share the host network and bind a
// 127.x address each; Services then get no endpoints (docs/node-agent.md).
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { IpPool } from './ip-pool.js';

const run = promisify(execFile);

export interface PodNetwork {
  /**
   * Prepares the pod's network; returns its address. An isolated pod gets no way in or out: its
   * address exists only inside its own namespace.
   */
  setup(podUid: string, previousIP: string | undefined, isolated: boolean): Promise<string>;
  /** Whether setup() can isolate a pod (else the sandbox must unshare the network itself). */
  readonly isolates: boolean;
  /** The argv that runs `argv` inside the pod's network. */
  wrap(podUid: string, argv: string[]): string[];
  teardown(podUid: string): Promise<void>;
}

export class LoopbackNetwork implements PodNetwork {
  readonly isolates = false;
  private readonly pool: IpPool;
  constructor(prefix: string) {
    this.pool = new IpPool(prefix);
  }
  async setup(podUid: string, previousIP: string | undefined): Promise<string> {
    return this.pool.allocate(podUid, previousIP);
  }
  wrap(_podUid: string, argv: string[]): string[] {
    return argv;
  }
  async teardown(podUid: string): Promise<void> {
    this.pool.release(podUid);
  }
}

export class NetnsNetwork implements PodNetwork {
  readonly isolates = true;
  private readonly pool: IpPool;
  private readonly gateway: string;
  // Named after the subnet, so agents on different subnets never touch each other's pods.
  private readonly bridge: string;
  private readonly nsPrefix: string;

  constructor(prefix: string) {
    this.bridge = `svcbr${prefix.replace('.', 'x')}`;
    this.nsPrefix = `svc-${prefix.replace('.', '-')}-`;
    // x.y.0.1 is the bridge: the pods' gateway and the host's address on the pod network.
    this.pool = new IpPool(prefix, [`${prefix}.0.1`]);
    this.gateway = `${prefix}.0.1`;
  }

  /** Creates the bridge (idempotent) and removes namespaces a previous agent left behind. */
  async init(): Promise<void> {
    await ip(['link', 'add', this.bridge, 'type', 'bridge']).catch(ignoreExists);
    await ip(['addr', 'add', `${this.gateway}/16`, 'dev', this.bridge]).catch(ignoreExists);
    await ip(['link', 'set', this.bridge, 'up']);
    const { stdout } = await run('ip', ['netns', 'list']);
    for (const line of stdout.split('\n')) {
      const name = line.split(' ')[0];
      if (name?.startsWith(this.nsPrefix)) await ip(['netns', 'del', name]).catch(() => undefined);
    }
  }

  private names(podUid: string) {
    const h = createHash('sha256').update(podUid).digest('hex');
    return { ns: `${this.nsPrefix}${h.slice(0, 12)}`, hostVeth: `svh${h.slice(0, 11)}`, podVeth: `svp${h.slice(0, 11)}` };
  }

  async setup(podUid: string, previousIP: string | undefined, isolated: boolean): Promise<string> {
    const address = this.pool.allocate(podUid, previousIP);
    const { ns, hostVeth, podVeth } = this.names(podUid);
    // Leftovers of an earlier attempt for the same pod.
    await ip(['netns', 'del', ns]).catch(() => undefined);
    await ip(['link', 'del', hostVeth]).catch(() => undefined);
    // Two `ip -batch` runs instead of a process per step: pod start-up is dominated by these.
    if (isolated) {
      await ipBatch([`netns add ${ns}`]);
      await ipBatch(['link set lo up', `addr add ${address}/32 dev lo`], ns);
      return address;
    }
    await ipBatch([
      `netns add ${ns}`,
      `link add ${hostVeth} type veth peer name ${podVeth}`,
      `link set ${podVeth} netns ${ns}`,
      `link set ${hostVeth} master ${this.bridge}`,
      `link set ${hostVeth} up`,
    ]);
    await ipBatch(
      ['link set lo up', `link set ${podVeth} name eth0`, `addr add ${address}/16 dev eth0`, 'link set eth0 up', `route add default via ${this.gateway}`],
      ns,
    );
    return address;
  }

  wrap(podUid: string, argv: string[]): string[] {
    return ['nsenter', `--net=/run/netns/${this.names(podUid).ns}`, '--', ...argv];
  }

  async teardown(podUid: string): Promise<void> {
    // Deleting the namespace deletes the pod's end of the veth pair, and with it the host's end.
    await ip(['netns', 'del', this.names(podUid).ns]).catch(() => undefined);
    this.pool.release(podUid);
  }
}

async function ip(args: string[]): Promise<void> {
  await run('ip', args);
}

/** Runs `ip` commands from one process (in the namespace `ns` when given); fails on the first error. */
function ipBatch(lines: string[], ns?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', [...(ns ? ['-n', ns] : []), '-batch', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(Object.assign(new Error(`ip -batch failed: ${stderr.trim()}`), { stderr }))));
    child.stdin.end(lines.join('\n') + '\n');
  });
}

function ignoreExists(err: { stderr?: string }): void {
  if (!/File exists|already assigned/.test(err.stderr ?? '')) throw err;
}
