// `svc open APP [PATH]`: prints a one-time link that opens the app signed in as its owner (the API's
// POST /apps/{appID}/auth/owner-link; valid five minutes, once). Open it in a browser.
export async function openCommand(o: { app: string; path: string; apiUrl: string; token: string }): Promise<string> {
  const res = await fetch(`${o.apiUrl}/apps/${encodeURIComponent(o.app)}/auth/owner-link`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ next: o.path }),
  });
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try {
      message = (JSON.parse(text) as { error: string }).error;
    } catch {
      // Not JSON: shown as it came.
    }
    throw new Error(`${res.status} ${message}`);
  }
  return (JSON.parse(text) as { url: string }).url;
}
