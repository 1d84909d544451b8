// The one error type of the API and the registry of its error classes. Every non-2XX answer of
// /api is `{"error": "<message>"}` with the registry's status; docs/api/errors.md documents every
// code, and a test fails when one is missing there.

export const errorRegistry = {
  invalid_json: { status: 400, description: 'The body is not valid JSON.' },
  invalid_request: { status: 400, description: 'The body, a query or a path parameter fails validation; the message names the field.' },
  authentication_required: { status: 401, description: 'No bearer token was sent.' },
  invalid_token: {
    status: 401,
    description: 'The token is malformed, tampered with, unknown, expired or revoked; the message says which.',
  },
  forbidden: { status: 403, description: 'The token is valid but lacks an action or an app; the message names what it lacks.' },
  not_found: { status: 404, description: 'No such route or resource.' },
  method_not_allowed: { status: 405, description: 'The route exists but not with this method; the Allow header lists the methods it has.' },
  conflict: { status: 409, description: 'The resource exists already, or the request conflicts with its current state.' },
  payment_required: {
    status: 402,
    description: 'The domain registrar refused the payment for a registration or a renewal; nothing was bought (docs/api/registrar.md).',
  },
  quota_exceeded: {
    status: 403,
    description:
      'The account is at one of its limits (apps, previews, databases, storage, tokens, webhooks); the message names the limit and what counts toward it.',
  },
  gone: {
    status: 410,
    description:
      'What the request names is no longer there: a cursor before what the event log still keeps (the message gives the cursor to list again from), or a used or expired sign-in code.',
  },
  payload_too_large: { status: 413, description: 'The body is larger than the configured limit.' },
  unsupported_media_type: { status: 415, description: 'A JSON write was sent without Content-Type: application/json.' },
  rate_limited: { status: 429, description: "The token's request rate is over the limit; Retry-After says when to try again." },
  internal: {
    status: 500,
    description: 'Something failed on our side; the message carries no internals, the request id finds the log line.',
  },
  bad_gateway: {
    status: 502,
    description:
      "What runs in the tenant's pod (a sandbox's agent) answered outside its bounds or its shape; the message says how. Nothing of the answer is kept.",
  },
  not_implemented: {
    status: 501,
    description: 'The operation belongs to a capability that is not built yet (docs/api/not-implemented.md).',
  },
  unavailable: { status: 503, description: 'A dependency (database, cluster) is unavailable; retry later.' },
} as const;

export type ErrorCode = keyof typeof errorRegistry;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string = code,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = errorRegistry[code].status;
  }
}

export const notFound = (what: string) => new ApiError('not_found', `${what} not found`);
export const invalid = (message: string) => new ApiError('invalid_request', message);
export const conflict = (message: string) => new ApiError('conflict', message);
