// A private BIND 9 (`named`, Debian's bind9; hack/install-deps.sh) for one test file: authoritative
// only, on a free loopback port (TCP and UDP), serving the zones the test names, each of them
// updatable (RFC 2136) with one TSIG key made here. The DNS-01 tests update records through it as
// the issuer updates the platform's delegation zone, and read them back as the CA would.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TsigKey } from '../../lib/dns/tsig.js';
import { supervise } from './child.js';
import { freePort } from './ports.js';
import { scratchDir } from './scratch.js';

export const namedBin = process.env.SVC_NAMED_BIN || '/usr/sbin/named';

export interface NamedZone {
  /** `acme.platform.test`. */
  name: string;
  /**
   * Zone-file lines besides the SOA and NS the zone gets anyway, names relative to the zone or
   * absolute: `_acme-challenge CNAME x.acme.platform.test.`.
   */
  records?: string[];
}

export interface NamedOptions {
  zones: (string | NamedZone)[];
  /** The key's name and algorithm (its secret is made here): `acme-update`, hmac-sha256 by default. */
  keyName?: string;
  algorithm?: TsigKey['algorithm'];
  /**
   * Answer a query that asks for recursion (RD) as the resolver an ACME CA asks does: a CNAME from
   * one of its zones into another comes with the target's records. Off by default, as an
   * authoritative server runs: it answers the CNAME alone (the target is out of the zone's
   * bailiwick) and the CA's resolver asks for the target next. Pebble's VA takes the TXT records of
   * the one answer of its -dnsserver and chases no CNAME, so a DNS-01 test of a CNAME-delegated
   * name points Pebble at a named with this on. Names outside its zones are then answered from a
   * root zone of its own (NXDOMAIN), never looked up on the Internet.
   */
  recursion?: boolean;
  /**
   * With recursion: every name outside its zones is asked of this server (`host:port`, the local
   * platform's DNS server whose records tests publish) instead of the local root, as a resolver
   * forwards. A CNAME it answers into one of named's own zones is followed, as a CA's resolver
   * follows a tenant's delegation. (A forward zone would not do: the local root is authoritative
   * above it, and authoritative data wins over forwarding.)
   */
  forwardTo?: string;
}

export interface Named {
  host: string;
  port: number;
  /** `127.0.0.1:<port>`, for Resolver.setServers. */
  server: string;
  /** The key every zone allows updates with. */
  key: TsigKey;
  /** What named has logged so far. */
  output(): string;
  stop(): Promise<void>;
}

class PortTakenError extends Error {}

/**
 * Starts named and waits until it answers the SOA query of each zone. It stops with the test file's
 * process if stop() was not called. A port another process took in the meantime is retried.
 */
export async function startNamed(options: NamedOptions): Promise<Named> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (attempt < 3 && err instanceof PortTakenError) continue;
      throw err;
    }
  }
}

function zoneFile(zone: NamedZone): string {
  const apex = zone.name === '' ? '' : `${zone.name}.`;
  // A short negative TTL: a test that reads a name before adding it does not cache the NXDOMAIN long.
  return [
    '$TTL 60',
    `@ IN SOA ns.${apex} hostmaster.${apex} 1 3600 600 86400 1`,
    `@ IN NS ns.${apex}`,
    'ns IN A 127.0.0.1',
    ...(zone.records ?? []),
    '',
  ].join('\n');
}

async function startOnce(options: NamedOptions): Promise<Named> {
  const zones = options.zones.map((z) => (typeof z === 'string' ? { name: z } : z));
  const key: TsigKey = {
    name: options.keyName ?? 'acme-update',
    algorithm: options.algorithm ?? 'hmac-sha256',
    secret: randomBytes(32),
  };
  const host = '127.0.0.1';
  const port = await freePort();
  const dir = scratchDir('svc-named-');
  const conf = path.join(dir, 'named.conf');
  for (const zone of zones) writeFileSync(path.join(dir, `${zone.name}.zone`), zoneFile(zone));
  if (options.recursion) writeFileSync(path.join(dir, 'root.zone'), zoneFile({ name: '' }));
  writeFileSync(
    conf,
    [
      'options {',
      `  directory "${dir}";`,
      `  pid-file "${path.join(dir, 'named.pid')}";`,
      `  session-keyfile "${path.join(dir, 'session.key')}";`,
      `  managed-keys-directory "${dir}";`,
      `  listen-on port ${port} { ${host}; };`,
      '  listen-on-v6 { none; };',
      ...(options.recursion ? ['  recursion yes;', `  allow-recursion { ${host}; };`] : ['  recursion no;']),
      ...(options.recursion && options.forwardTo
        ? [
            '  forward only;',
            `  forwarders { ${options.forwardTo.slice(0, options.forwardTo.lastIndexOf(':'))} port ${options.forwardTo.slice(options.forwardTo.lastIndexOf(':') + 1)}; };`,
          ]
        : []),
      '  dnssec-validation no;',
      '  notify no;',
      '  allow-transfer { none; };',
      '};',
      // No control channel: stop() signals the process, and the default one would take port 953.
      'controls { };',
      `key "${key.name}" { algorithm ${key.algorithm}; secret "${key.secret.toString('base64')}"; };`,
      ...(options.recursion && !options.forwardTo ? [`zone "." { type primary; file "${path.join(dir, 'root.zone')}"; };`] : []),
      ...zones.map(
        (z) => `zone "${z.name}" { type primary; file "${path.join(dir, `${z.name}.zone`)}"; allow-update { key "${key.name}"; }; };`,
      ),
      '',
    ].join('\n'),
  );
  // -g: foreground, logging to stderr; -4: the loopback address above only; as root without -u it
  // keeps root, which only needs to write the scratch directory.
  const child = spawn(namedBin, ['-g', '-4', '-n', '1', '-c', conf], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = supervise(child);
  const stop = () => proc.stop();

  const resolver = new Resolver({ timeout: 300, tries: 1 });
  resolver.setServers([`${host}:${port}`]);
  const deadline = Date.now() + 20_000;
  let waiting = [...zones];
  for (;;) {
    const described = `${namedBin} -g -c ${conf}`;
    if (/address in use/.test(proc.output())) {
      await stop();
      throw new PortTakenError(`named could not listen on ${host}:${port} (${described}); its output:\n${proc.output()}`);
    }
    const exited = proc.exited();
    if (exited !== undefined) {
      proc.kill();
      throw new Error(`named ${exited} during start-up (${described}); its output:\n${proc.output()}`);
    }
    const answered = await Promise.all(
      waiting.map((z) =>
        resolver.resolveSoa(z.name).then(
          () => true,
          () => false,
        ),
      ),
    );
    waiting = waiting.filter((_, i) => !answered[i]);
    if (waiting.length === 0) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `named did not answer the SOA of ${waiting.map((z) => z.name).join(', ')} in 20 s (${described}); its output:\n${proc.output()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { host, port, server: `${host}:${port}`, key, output: () => proc.output(), stop };
}
