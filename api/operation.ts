// One route table drives both the router and GET /openapi.json, so the document cannot drift from
// the code. Each operation declares its action (what a token needs), its schemas, and its handler;
// an operation without a handler belongs to a capability not built yet and answers 501.
import type { Readable } from 'node:stream';
import type { z } from 'zod';
import type { Account } from '../lib/accounts.js';
import type { Action } from '../lib/tokens/token.js';
import type { Principal } from '../lib/tokens/store.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const tags = ['account', 'apps', 'deploys', 'builds', 'data', 'domains', 'sandboxes', 'events', 'system'] as const;
export type Tag = (typeof tags)[number];

/** Which issue brings an operation that is not implemented yet (listed in docs/api/not-implemented.md). */
export type Pending = 'builds' | 'data' | 'domains';

export interface Caller {
  principal: Principal;
  account: Account;
  /** The token as the request presented it (bearer or the console's cookie): what a long stream re-checks. */
  credential: string;
}

export interface HandlerInput<B, Q> {
  body: B;
  query: Q;
  params: Record<string, string>;
  caller: Caller;
  /** The request's headers (lowercase names), for content negotiation (Accept). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The client's address (the socket's, or X-Forwarded-For's within SVC_API_PROXY_HOPS). */
  ip: string;
  /** The raw request body, when the operation accepts uploads and one of its types was sent. */
  upload?: { stream: Readable; contentType: string; length: number | undefined };
}

export interface HandlerResult {
  status?: number;
  /**
   * Sent as JSON, except a string (sent as it is) and a Readable stream (sent as it is produced,
   * for streaming endpoints; the router flushes the headers at once and sets no socket timeout).
   */
  body: unknown;
  /** Response headers, e.g. the Content-Type of a body that is not JSON. */
  headers?: Record<string, string | string[]>;
}

interface OperationBase {
  method: Method;
  /** OpenAPI path template, e.g. /apps/{appID}. */
  path: string;
  operationId: string;
  tag: Tag;
  summary: string;
  /** Acts on the whole account (tokens, webhooks, usage): refused to tokens restricted to apps. */
  accountWide?: boolean;
  /** Documents the successful response body. */
  response?: z.ZodType;
  /** Success status when it is not 200. */
  status?: number;
}

export interface PublicOperation extends OperationBase {
  action: null;
  handler: () => Promise<HandlerResult> | HandlerResult;
}

export interface AuthenticatedOperation<B = unknown, Q = unknown> extends OperationBase {
  action: Action;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  // Method syntax on purpose: it lets the table hold operations of every input type (bivariance),
  // while op() still checks each handler against its own schemas.
  handler?(input: HandlerInput<B, Q>): Promise<HandlerResult>;
  /** Set on operations without a handler: the capability that will bring it. */
  pending?: Pending;
  /** Also accepts a streamed (not buffered) body of these media types, up to limitBytes. */
  upload?: { types: string[]; limitBytes: number; description: string };
  /**
   * True when the request acts on the very credential that makes it: then it needs none of the
   * operation's action or account-wide access (a token may always revoke itself, as OAuth's
   * revocation endpoint lets any client, RFC 7009; `svc logout` with a read-only token).
   */
  ownCredential?(params: Readonly<Record<string, string>>, principal: Principal): boolean;
}

export type Operation = PublicOperation | AuthenticatedOperation;

/** Declares an authenticated operation with its handler typed by its schemas. */
export function op<B = undefined, Q = undefined>(def: AuthenticatedOperation<B, Q>): Operation {
  return def;
}
