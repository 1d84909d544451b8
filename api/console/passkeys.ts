// Console passkeys of account owners (lib/auth/passkeys.ts, realm accountPasskeys). The relying
// party is the API's public origin (config api.publicUrl), never a request's Host: its hostname is
// the RP ID and its origin the only one a ceremony's client data may name. A signed-in owner adds
// one (and hears of it by mail); later it signs that owner in with no mail round trip. WebAuthn
// refuses an IP address as an RP ID, so an API published at one (127.0.0.1) offers no passkeys.
import { isIP } from 'node:net';
import type { Knex } from 'knex';
import { accountPasskeys, PasskeyService, type Passkey } from '../../lib/auth/passkeys.js';
import type { OutgoingMail } from '../../lib/mail/outbox.js';
import { passkeyAddedMail } from './mail.js';

/** The one scope of console passkeys. */
const scope = 'console';

export interface ConsolePasskeysDeps {
  db: Knex;
  mail: { enqueue(msg: OutgoingMail, trx?: Knex): Promise<unknown> };
  publicUrl: string;
  clock: () => Date;
}

export class ConsolePasskeys {
  private readonly service: PasskeyService;
  private readonly rpId: string;
  private readonly origin: string;

  constructor(private readonly d: ConsolePasskeysDeps) {
    this.service = new PasskeyService(d.db, d.clock, accountPasskeys);
    const url = new URL(d.publicUrl);
    this.rpId = url.hostname;
    this.origin = url.origin;
  }

  /** Why passkeys cannot work at this API's public origin; undefined when they can. */
  get unavailable(): string | undefined {
    const host = this.rpId.replace(/^\[|\]$/g, '');
    if (isIP(host)) return `passkeys need the console at a host name, and it is published at ${this.origin} (SVC_API_PUBLIC_URL)`;
    return undefined;
  }

  registrationOptions(account: { id: string; email: string }) {
    return this.service.registrationOptions({ scope, rpId: this.rpId, rpName: 'svc console', user: account });
  }

  /** Checks and stores a new passkey of the account, and mails its owner about it; the new passkey. */
  async register(account: { id: string; email: string }, challengeId: string, response: unknown, from: string): Promise<Passkey> {
    const added = await this.service.verifyRegistration({
      scope,
      rpId: this.rpId,
      origin: this.origin,
      challengeId,
      userId: account.id,
      response,
    });
    await this.d.mail.enqueue(
      passkeyAddedMail({ email: account.email, addedFrom: from, addedAt: this.d.clock(), passkeysUrl: `${this.origin}/console/passkeys` }),
    );
    return added;
  }

  signInOptions() {
    return this.service.authenticationOptions({ scope, rpId: this.rpId });
  }

  /** The account a passkey sign-in proves. */
  async signIn(challengeId: string, response: unknown): Promise<string> {
    const { ownerId } = await this.service.verifyAuthentication({ scope, rpId: this.rpId, origin: this.origin, challengeId, response });
    return ownerId;
  }

  list(accountId: string): Promise<Passkey[]> {
    return this.service.list(scope, accountId);
  }

  remove(accountId: string, id: string): Promise<boolean> {
    return this.service.delete(scope, accountId, id);
  }
}
