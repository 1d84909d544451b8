// Builds the OpenAPI 3.1 document from the route table: the same objects the router serves.
import { z } from 'zod';
import { errorRegistry } from './errors.js';
import { tags, type Operation } from './operation.js';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
}

const statusText: Record<number, string> = { 200: 'OK', 201: 'Created', 204: 'No content' };

function operationObject(op: Operation): Record<string, unknown> {
  const parameters: unknown[] = pathParams(op.path).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  if (op.action !== null && op.query) {
    const q = jsonSchema(op.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
    }
  }
  const success = op.status ?? 200;
  const responses: Record<string, unknown> = {
    [String(success)]: {
      description: statusText[success] ?? 'Success',
      ...(op.response ? { content: { 'application/json': { schema: jsonSchema(op.response, 'output') } } } : {}),
    },
    default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  };
  const pending = op.action !== null && !op.handler;
  return {
    operationId: op.operationId,
    summary: op.summary,
    tags: [op.tag],
    ...(parameters.length ? { parameters } : {}),
    ...(op.action !== null && op.body
      ? {
          requestBody: {
            // Required when the body has required fields, or is the upload the operation takes instead.
            required: Boolean(op.upload) || ((jsonSchema(op.body, 'input').required as unknown[] | undefined)?.length ?? 0) > 0,
            ...(op.action !== null && op.upload ? { description: op.upload.description } : {}),
            content: {
              'application/json': { schema: jsonSchema(op.body, 'input') },
              ...Object.fromEntries(
                op.action !== null && op.upload ? op.upload.types.map((t) => [t, { schema: { type: 'string', contentMediaType: t } }]) : [],
              ),
            },
          },
        }
      : {}),
    responses,
    security: op.action === null ? [] : [{ bearer: [] }],
    ...(op.action !== null ? { 'x-svc-action': op.action } : {}),
    ...(pending ? { 'x-svc-not-implemented': true, description: 'Not implemented yet: answers 501 {"error": "not_implemented"}.' } : {}),
  };
}

export function buildOpenApi(operations: readonly Operation[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(op);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc platform API',
      version: '1',
      description: 'The public tenant API. Every non-2XX answer is {"error": string}.',
    },
    servers: [{ url: '/api' }],
    tags: tags.map((name) => ({ name })),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API token (svc_...); see docs/api/tokens.md.' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'string', description: `A message or one of: ${Object.keys(errorRegistry).join(', ')}` } },
        },
      },
    },
  };
}
