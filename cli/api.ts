// The CLI's one way to call the platform's public API: bearer token, JSON in and out, and the API's
// `{error}` answers turned into an error that says the status and the message.
export interface ApiTarget {
  apiUrl: string;
  token: string;
}

export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(`${status} ${message}`);
    this.name = 'ApiCallError';
  }
}

/** The response of a call, once its status is known to be a success (the body unread). */
export async function request(
  t: ApiTarget,
  method: string,
  path: string,
  opts: { json?: unknown; body?: NonNullable<RequestInit['body']>; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${t.token}`, ...opts.headers };
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${t.apiUrl}${path}`, {
    method,
    headers,
    ...(opts.json !== undefined ? { body: JSON.stringify(opts.json) } : opts.body !== undefined ? { body: opts.body, duplex: 'half' } : {}),
  });
  if (res.ok) return res;
  const text = await res.text();
  let message = text;
  try {
    message = (JSON.parse(text) as { error: string }).error;
  } catch {
    // Not JSON: shown as it came.
  }
  throw new ApiCallError(res.status, message);
}

export async function callJson<T>(t: ApiTarget, method: string, path: string, json?: unknown): Promise<T> {
  const res = await request(t, method, path, json === undefined ? {} : { json });
  return (await res.json()) as T;
}
