// Standard Webhooks signatures (https://www.standardwebhooks.com): `v1,` and base64 of
// HMAC-SHA256 over `id.timestamp.body` keyed with the secret's bytes (the base64 after `whsec_`).
// During a secret rotation's overlap a delivery carries one signature per secret, space-separated,
// and a receiver accepts it when any one verifies.
import { createHmac } from 'node:crypto';

export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The three headers of one attempt: `secrets` newest first. */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signature(s, id, timestamp, body)).join(' '),
  };
}
