// The typed client of the platform's public API, for the CLI and the console alike (decision 0029):
// openapi-fetch over the types openapi-typescript generates from GET /api/openapi.json
// (schema.gen.ts, `make gen-client`), so no request or answer shape is written by hand. One
// middleware sends the bearer token and turns every answer that is not a success into an ApiError,
// and a failure to reach the API into an ApiUnreachableError, in words.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './schema.gen.js';

export type { components, operations, paths };

/** A client of the API: `client.GET('/apps/{appID}/domains', { params: { path: { appID } } })`, typed by the document. */
export type ApiClient = Client<paths>;

/** The API answered with a status that is not a success: its `{"error"}` message, and the request id it stamped. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The API's `error` message, or the body as it came when it is not the API's JSON. */
    readonly apiMessage: string,
    /** The X-Request-Id of the answer, which finds the API's log line. */
    readonly requestId: string | undefined,
  ) {
    // The words the CLI has always printed: the status, then the API's message. The
    // API's messages say what to do: a 401 that a token must be sent or why it was refused, a 403
    // which action or app the token lacks.
    super(`${status} ${apiMessage}`);
    this.name = 'ApiError';
  }
}

/** The API could not be reached (refused, unresolvable, reset, timed out): no answer, so no status. */
export class ApiUnreachableError extends Error {
  constructor(
    readonly baseUrl: string,
    readonly reason: string,
  ) {
    super(`cannot reach the API at ${baseUrl}: ${reason}`);
    this.name = 'ApiUnreachableError';
  }
}

/** The words of a failed fetch: undici's TypeError says only "fetch failed"; its cause says why. */
function reasonOf(err: unknown): string {
  const seen: string[] = [];
  for (let e: unknown = err; e instanceof Error && seen.length < 4; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (e.message && e.message !== 'fetch failed') seen.push(e.message);
    else if (typeof code === 'string') seen.push(code);
  }
  return seen.at(-1) ?? String(err);
}

async function apiErrorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  let message = text;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') message = body.error;
  } catch {
    // Not the API's JSON (a proxy's page): shown as it came.
  }
  return new ApiError(response.status, message, response.headers.get('x-request-id') ?? undefined);
}

/**
 * A path of the document with its parameters filled in, URL-encoded, a wildcard domain's `*` as
 * `%2A` as well (docs/api/domains.md): what the client requests.
 */
export function apiPath(pathname: string, params: Record<string, unknown>): string {
  return pathname.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    // The document's path parameters are all strings (api/openapi.ts); anything else is left unfilled.
    const value = params[name];
    if (typeof value !== 'string' && typeof value !== 'number') return whole;
    return encodeURIComponent(value).replace(/\*/g, '%2A');
  });
}

export interface ApiClientOptions {
  /** The API's root, e.g. https://api.svc.example/api ($SVC_API_URL). */
  baseUrl: string;
  /** A bearer token (svc_...). */
  token: string;
  /** fetch to use instead of the global one (tests). */
  fetch?: (input: Request) => Promise<Response>;
}

export function createApiClient(o: ApiClientOptions): ApiClient {
  const client = createClient<paths>({ baseUrl: o.baseUrl, pathSerializer: apiPath, ...(o.fetch ? { fetch: o.fetch } : {}) });
  const middleware: Middleware = {
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${o.token}`);
      return request;
    },
    async onResponse({ response }) {
      if (!response.ok) throw await apiErrorOf(response);
      return undefined;
    },
    // Only fetch itself failing comes here (what onResponse throws does not).
    onError: ({ error }) => new ApiUnreachableError(o.baseUrl, reasonOf(error)),
  };
  client.use(middleware);
  return client;
}

/**
 * The body of an answer: `const { domains } = await body(api.GET(...))`. Every answer that is not
 * a success has already become an ApiError, so this only narrows the type (and refuses a success
 * with no body where the document promises one).
 */
export async function body<R extends { data?: unknown; response: Response }>(call: Promise<R>): Promise<NonNullable<R['data']>> {
  const { data, response } = await call;
  if (data === undefined || data === null) {
    throw new ApiError(response.status, 'the API answered with no body', response.headers.get('x-request-id') ?? undefined);
  }
  return data;
}

/**
 * Options that send bytes as a call's body, streamed as they are read: a deploy's or a build's
 * .tar.gz, a file into a sandbox. openapi-fetch serializes a body as JSON, and the document types a
 * binary body as a string (and an extension's upload, PUT /sandboxes/{sandboxID}/files, not at all),
 * so nothing is serialized and this middleware puts the bytes on the request after the client's own
 * has added the token: the answer is the client's as for any call, typed by the document, an
 * ApiError when it is not a success. Where the document requires a body, `body: ''` stands for the
 * bytes (its type for them is a string); it is never sent.
 *
 *   api.PUT('/sandboxes/{sandboxID}/files', { params, ...sendBytes(stream, 'application/octet-stream', size) })
 *   api.POST('/apps/{appID}/deploy', { params, body: '', ...sendBytes(archive, 'application/gzip') })
 */
export function sendBytes(
  bytes: ReadableStream<Uint8Array> | Uint8Array,
  contentType: string,
  length?: number,
): { bodySerializer: () => undefined; middleware: Middleware[] } {
  const put: Middleware = {
    onRequest({ request }) {
      const headers = new Headers(request.headers);
      headers.set('content-type', contentType);
      if (length !== undefined) headers.set('content-length', String(length));
      // duplex 'half': a streamed body is sent as it is read (what Node's fetch requires of a stream).
      return new Request(request, { body: bytes, headers, duplex: 'half' });
    },
  };
  return { bodySerializer: () => undefined, middleware: [put] };
}
