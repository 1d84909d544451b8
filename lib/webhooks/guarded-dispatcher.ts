// The HTTP client webhook deliveries use: an undici Agent whose every connection resolves its host
// through the URL guard and connects only to the addresses it checked (no second lookup, so no
// DNS-rebinding window), refuses IP literals that are not public, and follows no redirect (undici's
// Agent never does by itself; a 3XX is the delivery's answer, recorded, not followed).
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { isPublicAddress, publicAddressesOf, systemResolver, WebhookAddressError, type HostResolver } from './url-guard.js';

export interface GuardOptions {
  resolver?: HostResolver;
  /** Which addresses may be reached; default: public ones only. Tests widen it to chosen loopback addresses. */
  isAllowed?: (address: string) => boolean;
  /** Connection timeout. */
  connectTimeoutMs?: number;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net.connect that answers only with guarded addresses. */
export function guardedLookup(opts: GuardOptions = {}): (host: string, options: LookupOptions, callback: LookupCallback) => void {
  return (host, options, callback) => {
    publicAddressesOf(host, opts.resolver ?? systemResolver, opts.isAllowed ?? isPublicAddress).then(
      (addresses) => {
        const list = addresses.map((address) => ({ address, family: isIP(address) }));
        if (options.all) return callback(null, list);
        const first = list.find((a) => !options.family || a.family === options.family) ?? list[0]!;
        callback(null, first.address, first.family);
      },
      (err: Error) => callback(Object.assign(err, { code: (err as NodeJS.ErrnoException).code ?? 'ERR_WEBHOOK_ADDRESS' }), ''),
    );
  };
}

/** The dispatcher of webhook deliveries (pass as `dispatcher` to undici's request or fetch). */
export function webhookDispatcher(opts: GuardOptions = {}): Agent {
  const isAllowed = opts.isAllowed ?? isPublicAddress;
  const connector = buildConnector({ lookup: guardedLookup(opts), timeout: opts.connectTimeoutMs ?? 10_000 });
  return new Agent({
    connect: (options, callback) => {
      // An IP literal is connected to without a lookup: check it here.
      const host = options.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && !isAllowed(host)) return callback(new WebhookAddressError(`${host} is not a public address`, 'private'), null);
      return connector(options, callback);
    },
  });
}
