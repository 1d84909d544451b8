// Sandboxes, eval and runtimes (docs/api/sandboxes.md): disposable pods for untrusted code, opened
// from a warm pool, with exec (JSON or streamed NDJSON) and files through the in-pod agent. Every
// operation but GET /runtimes acts on the account's sandboxes as a whole, so a token restricted to
// apps cannot use them. The decisions (limits, runtimes, readiness) are the sandbox service's
// (api/sandboxes/service.ts); the answers are presented by api/presenters/sandboxes.ts.
import { z } from 'zod';
import { actorOf } from '../actor.js';
import { ApiError } from '../errors.js';
import { op, type HandlerInput, type HandlerResult, type Operation } from '../operation.js';
import {
  evalResultSchema,
  execResultSchema,
  presentSandbox,
  runtimesSchema,
  sandboxSchema,
  uploadResultSchema,
} from '../presenters/sandboxes.js';
import type { ExecInput } from '../sandboxes/service.js';
import type { ApiDeps } from '../deps.js';

type Deps = {
  sandboxes: Pick<
    ApiDeps['sandboxes'],
    'runtimes' | 'evaluate' | 'oneShot' | 'list' | 'open' | 'get' | 'destroy' | 'exec' | 'execStream' | 'upload' | 'download'
  >;
};

const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi)?$/, 'must be a Kubernetes quantity (500m, 1, 512Mi, 1Gi)');

const execFields = z.object({
  command: z
    .string()
    .min(1)
    .max(128 * 1024)
    .optional()
    .describe('A shell command, run with /bin/sh -c'),
  argv: z
    .array(z.string().max(128 * 1024))
    .min(1)
    .max(4096)
    .optional()
    .describe('A program and its arguments, run as they are (no shell)'),
  cwd: z.string().min(1).max(4096).optional().describe('Working directory, relative to /home/app (the default)'),
  env: z
    .record(
      z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
        .max(256),
      z.string().max(128 * 1024),
    )
    .optional(),
  stdin: z.string().optional().describe('Text written to the standard input'),
  stdin_base64: z
    .string()
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64')
    .optional()
    .describe('Bytes written to the standard input, base64'),
  timeout_seconds: z
    .number()
    .positive()
    .max(24 * 3600)
    .optional()
    .describe("Kill the command (status timed_out) after this long; default 60, never beyond the sandbox's lifetime"),
  max_output_bytes: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Bytes kept per stream (stdout, stderr); at most the platform's cap (1 MiB by default)"),
  stream: z.boolean().optional().describe('Answer NDJSON lines as output comes (also with Accept: application/x-ndjson)'),
});
type ExecFields = z.infer<typeof execFields>;

const oneOfCommand = (b: { command?: string | undefined; argv?: string[] | undefined }) =>
  (b.command !== undefined ? 1 : 0) + (b.argv !== undefined ? 1 : 0) === 1;
const execBody = execFields.refine(oneOfCommand, 'give exactly one of command and argv');

const openFields = z.object({
  runtime: z
    .string()
    .min(1)
    .max(63)
    .optional()
    .describe('A runtime from GET /runtimes (default python); every runtime is installed in every sandbox'),
  network: z.boolean().optional().describe('Allow outbound connections (default false: none at all)'),
  idle_timeout_seconds: z
    .number()
    .int()
    .min(5)
    .max(86400)
    .optional()
    .describe('End after this long with no exec or file transfer (default 300)'),
  max_lifetime_seconds: z.number().int().min(5).max(86400).optional().describe('End this long after opening, busy or not (default 3600)'),
  resources: z.object({ cpu: quantity.optional(), memory: quantity.optional(), disk: quantity.optional() }).strict().optional(),
});
const openBody = openFields.extend({
  wait_seconds: z
    .number()
    .min(0)
    .max(120)
    .optional()
    .describe('How long to wait for the sandbox to be ready (default 60; 0 answers at once)'),
});

const evalBody = z.object({
  runtime: z.string().min(1).max(63).describe('A runtime from GET /runtimes'),
  code: z.string().max(4 * 1024 * 1024),
  network: z.boolean().optional(),
  stdin: execFields.shape.stdin,
  stdin_base64: execFields.shape.stdin_base64,
  env: execFields.shape.env,
  timeout_seconds: execFields.shape.timeout_seconds,
  max_output_bytes: execFields.shape.max_output_bytes,
  stream: execFields.shape.stream,
});

const oneShotBody = execFields
  .extend({ runtime: openFields.shape.runtime, network: openFields.shape.network, resources: openFields.shape.resources })
  .refine(oneOfCommand, 'give exactly one of command and argv');

const execInput = (b: Omit<ExecFields, 'stream'>): ExecInput => ({
  command: b.command,
  argv: b.argv,
  cwd: b.cwd,
  env: b.env,
  stdin: b.stdin,
  stdinBase64: b.stdin_base64,
  timeoutSeconds: b.timeout_seconds,
  maxOutputBytes: b.max_output_bytes,
});

function wantsStream(input: HandlerInput<{ stream?: boolean | undefined }, unknown>): boolean {
  const accept = input.headers.accept;
  return input.body.stream === true || (typeof accept === 'string' && accept.includes('application/x-ndjson'));
}

const ndjson = (body: unknown): HandlerResult => ({
  body,
  headers: { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-store' },
});

export function sandboxOperations(s: Deps): Operation[] {
  const sb = s.sandboxes;
  const idParam = (params: Record<string, string>) => params.sandboxID!;
  return [
    op({
      method: 'GET',
      path: '/runtimes',
      operationId: 'listRuntimes',
      tag: 'sandboxes',
      summary: 'List runtimes',
      action: 'read',
      response: runtimesSchema,
      handler: async () => ({ body: { runtimes: await sb.runtimes() } }),
    }),
    op({
      method: 'POST',
      path: '/eval',
      operationId: 'evalCode',
      tag: 'sandboxes',
      summary: 'Evaluate one-shot code',
      action: 'exec',
      accountWide: true,
      body: evalBody,
      response: evalResultSchema,
      handler: async (input) => {
        const { caller, body } = input;
        const code = { runtime: body.runtime, code: body.code, network: body.network };
        if (wantsStream(input)) return ndjson(await sb.evaluate(actorOf(caller), code, execInput(body), true));
        return { body: await sb.evaluate(actorOf(caller), code, execInput(body)) };
      },
    }),
    op({
      method: 'POST',
      path: '/sandbox/exec',
      operationId: 'execOneShot',
      tag: 'sandboxes',
      summary: 'Run a one-shot sandbox command',
      action: 'exec',
      accountWide: true,
      body: oneShotBody,
      response: execResultSchema,
      handler: async (input) => {
        const { caller, body } = input;
        const open = { runtime: body.runtime, network: body.network, resources: body.resources };
        if (wantsStream(input)) return ndjson(await sb.oneShot(actorOf(caller), open, execInput(body), undefined, true));
        return { body: await sb.oneShot(actorOf(caller), open, execInput(body)) };
      },
    }),
    op({
      method: 'GET',
      path: '/sandboxes',
      operationId: 'listSandboxes',
      tag: 'sandboxes',
      summary: 'List open sandboxes',
      action: 'read',
      accountWide: true,
      query: z.object({ all: z.enum(['true', 'false']).optional().describe('Include ended sandboxes still kept (24 h)') }),
      response: z.object({ sandboxes: z.array(sandboxSchema) }),
      handler: async ({ caller, query }) => ({ body: { sandboxes: sb.list(actorOf(caller), query.all === 'true').map(presentSandbox) } }),
    }),
    op({
      method: 'POST',
      path: '/sandboxes',
      operationId: 'openSandbox',
      tag: 'sandboxes',
      summary: 'Open a sandbox',
      action: 'exec',
      accountWide: true,
      status: 201,
      body: openBody,
      response: sandboxSchema,
      handler: async ({ caller, body }) => {
        const sandbox = await sb.open(actorOf(caller), {
          runtime: body.runtime,
          network: body.network,
          idleTimeoutSeconds: body.idle_timeout_seconds,
          maxLifetimeSeconds: body.max_lifetime_seconds,
          resources: body.resources,
          waitMs: body.wait_seconds === undefined ? undefined : body.wait_seconds * 1000,
        });
        return { status: 201, body: presentSandbox(sandbox) };
      },
    }),
    op({
      method: 'GET',
      path: '/sandboxes/{sandboxID}',
      operationId: 'getSandbox',
      tag: 'sandboxes',
      summary: 'Get a sandbox',
      action: 'read',
      accountWide: true,
      response: sandboxSchema,
      handler: async ({ caller, params }) => ({ body: presentSandbox(sb.get(actorOf(caller), idParam(params))) }),
    }),
    op({
      method: 'DELETE',
      path: '/sandboxes/{sandboxID}',
      operationId: 'destroySandbox',
      tag: 'sandboxes',
      summary: 'Destroy a sandbox',
      action: 'exec',
      accountWide: true,
      response: sandboxSchema,
      handler: async ({ caller, params }) => ({ body: presentSandbox(await sb.destroy(actorOf(caller), idParam(params))) }),
    }),
    op({
      method: 'POST',
      path: '/sandboxes/{sandboxID}/exec',
      operationId: 'execInSandbox',
      tag: 'sandboxes',
      summary: 'Run a command in a sandbox',
      action: 'exec',
      accountWide: true,
      body: execBody,
      response: execResultSchema,
      handler: async (input) => {
        const { caller, body, params } = input;
        if (wantsStream(input)) return ndjson(await sb.execStream(actorOf(caller), idParam(params), execInput(body)));
        return { body: await sb.exec(actorOf(caller), idParam(params), execInput(body)) };
      },
    }),
    op({
      method: 'PUT',
      path: '/sandboxes/{sandboxID}/files',
      operationId: 'uploadSandboxFile',
      tag: 'sandboxes',
      summary: 'Write a file into a sandbox (extension)',
      action: 'exec',
      accountWide: true,
      query: z.object({ path: z.string().min(1).max(4096).describe('Where, relative to /home/app or absolute under /home/app or /tmp') }),
      upload: {
        types: ['application/octet-stream'],
        limitBytes: 2 * 1024 ** 3,
        description: "The file's bytes, as the body, with Content-Type application/octet-stream",
      },
      response: uploadResultSchema,
      handler: async ({ caller, params, query, upload }) => {
        if (!upload) throw new ApiError('unsupported_media_type', 'send the file as the body with Content-Type: application/octet-stream');
        return { body: await sb.upload(actorOf(caller), idParam(params), query.path, upload.stream, upload.length) };
      },
    }),
    op({
      method: 'GET',
      path: '/sandboxes/{sandboxID}/files',
      operationId: 'downloadSandboxFile',
      tag: 'sandboxes',
      summary: 'Read a file from a sandbox (extension)',
      action: 'read',
      accountWide: true,
      query: z.object({ path: z.string().min(1).max(4096) }),
      handler: async ({ caller, params, query }) => {
        const file = await sb.download(actorOf(caller), idParam(params), query.path);
        return {
          body: file.stream,
          headers: {
            'Content-Type': 'application/octet-stream',
            ...(file.size !== undefined ? { 'Content-Length': String(file.size) } : {}),
          },
        };
      },
    }),
  ];
}
