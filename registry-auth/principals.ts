// Who a credential shown to the token service is, checked against what the platform stores: the
// operator's and the nodes' by the SHA-256 of their passwords in the clients file (hack/nodes.sh
// writes it), an account's by the SHA-256 on its namespace (the account controller writes it), a
// build's by its HMAC under the artifact key (the Build controller minted it; lib/artifacts/credential.ts)
// and the Build it names, which must still be running. Anything else is no one.
import { readFileSync, statSync } from 'node:fs';
import { checkBuildCredential } from '../lib/artifacts/credential.js';
import { matchesHash } from '../lib/registry/pull-credential.js';
import { parseRegistryUser, platformUsers } from '../lib/registry/names.js';
import type { Principal } from './grants.js';

export interface PrincipalSources {
  /** The stored hash of a platform user's password (operator, node), if the clients file names it. */
  platformHash(user: string): string | undefined;
  /** The stored hash of an account's pull credential, if `namespace` is an account's and has one. */
  accountHash(namespace: string): Promise<string | undefined>;
  /** The app of build `build` in `namespace` and whether it has ended; undefined when there is no such Build. */
  build(namespace: string, build: string): Promise<{ app: string; ended: boolean } | undefined>;
  /** The key build credentials are made with; none: no build is ever let in. */
  artifactKey: Buffer | undefined;
  clock: () => Date;
}

export async function identify(s: PrincipalSources, username: string, password: string): Promise<Principal | undefined> {
  const user = parseRegistryUser(username);
  if (!user || !password) return undefined;
  switch (user.kind) {
    case 'operator':
    case 'node':
      return matchesHash(password, s.platformHash(platformUsers[user.kind])) ? { kind: user.kind } : undefined;
    case 'account':
      return matchesHash(password, await s.accountHash(user.namespace)) ? { kind: 'account', namespace: user.namespace } : undefined;
    case 'build': {
      if (!s.artifactKey || !checkBuildCredential(s.artifactKey, user.namespace, user.build, password, s.clock()).ok) return undefined;
      // A build's credential pushes only while its build runs: one leaked from a finished build's
      // pod (its commands could read it) opens nothing.
      const build = await s.build(user.namespace, user.build);
      return build && !build.ended ? { kind: 'build', namespace: user.namespace, build: user.build, app: build.app } : undefined;
    }
  }
}

/**
 * The clients file: `<user> <sha256 hex>` per line (`#` comments), read again whenever it changes,
 * so that a rotated operator or node credential counts without a restart.
 */
export class ClientsFile {
  private cached: { mtimeMs: number; size: number; hashes: Map<string, string> } | undefined;

  constructor(private readonly file: string) {}

  hashOf(user: string): string | undefined {
    let st;
    try {
      st = statSync(this.file);
    } catch {
      return undefined;
    }
    if (!this.cached || this.cached.mtimeMs !== st.mtimeMs || this.cached.size !== st.size) {
      const hashes = new Map<string, string>();
      for (const line of readFileSync(this.file, 'utf8').split('\n')) {
        const m = /^\s*(\S+)\s+([0-9a-f]{64})\s*$/.exec(line);
        if (m) hashes.set(m[1]!, m[2]!);
      }
      this.cached = { mtimeMs: st.mtimeMs, size: st.size, hashes };
    }
    return this.cached.hashes.get(user);
  }
}
