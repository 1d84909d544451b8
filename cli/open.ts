// `svc open APP [PATH]`: prints a one-time link that opens the app signed in as its owner (the API's
// POST /apps/{appID}/auth/owner-link; valid five minutes, once). Open it in a browser.
import { callJson } from './api.js';

export async function openCommand(o: { app: string; path: string; apiUrl: string; token: string }): Promise<string> {
  const { url } = await callJson<{ url: string }>(o, 'POST', `/apps/${encodeURIComponent(o.app)}/auth/owner-link`, { next: o.path });
  return url;
}
