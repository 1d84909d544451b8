// Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, for the sign-in flows
// a real browser must run: fragment redemption by the page's script, cookies, redirects, passkeys.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const chromiumPath = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath))
    throw new Error(`Chromium is not at ${chromiumPath}: make test installs Debian's chromium (hack/install-deps.sh), or set SVC_CHROMIUM`);
  // No sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** The first sign-in link in a received message (text part; quoted-printable undone). */
export function signInLink(raw: string): string {
  const text = raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
  const m = /https?:\/\/\S+?#(?:token|handoff)=[A-Za-z0-9_-]{43}/.exec(text);
  if (!m) throw new Error(`no sign-in link in:\n${raw.slice(0, 2000)}`);
  return m[0];
}

/** A passkey authenticator in `page` (Chromium's virtual one over the DevTools protocol): CTAP2, resident keys, the user verified. */
export async function addVirtualAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}
