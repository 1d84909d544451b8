// The browser's half of the console's passkey ceremonies, through @simplewebauthn/browser (the same
// project as the API's @simplewebauthn/server: the JSON shapes match by construction, decision
// 0033). Browser-only (navigator.credentials): imported by pages, never by tests.
import {
  browserSupportsWebAuthn,
  startAuthentication,
  startRegistration,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/browser';
import { api, data, passkeySignInOptions, signInWithPasskey, type ConsolePasskey } from './api.js';

export const passkeysInThisBrowser = browserSupportsWebAuthn;

/** Signs in with a passkey this browser or a security key holds; the session cookie is set. */
export async function passkeySignIn(): Promise<void> {
  const { challenge_id, options } = await passkeySignInOptions();
  const response = await startAuthentication({ optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON });
  await signInWithPasskey(challenge_id, response);
}

/** Makes a new passkey for the signed-in owner and registers it; the passkey as listed. */
export async function addPasskey(): Promise<ConsolePasskey> {
  const { challenge_id, options } = await data(api.POST('/console/passkeys/options'));
  const response = await startRegistration({ optionsJSON: options as unknown as PublicKeyCredentialCreationOptionsJSON });
  return data(api.POST('/console/passkeys', { body: { challenge_id, response: response as unknown as Record<string, unknown> } }));
}
