// The OpenAPI document is built from the route table; it must be valid OpenAPI 3.1 and list exactly
// the operations of the spec (same paths, methods and path-parameter names).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildOpenApi } from '../../api/openapi.js';
import { allOperations } from '../../api/server.js';
import { loadConfig } from '../../lib/config.js';
import type { ApiDeps } from '../../api/deps.js';
import { repoRoot } from '../../lib/paths.js';

// Building the table needs no live service: handlers are not called here.
const operations = allOperations({ config: loadConfig({}, { exists: () => false }) } as unknown as ApiDeps);
const doc = buildOpenApi(operations) as {
  openapi: string;
  info: { version: string };
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Record<string, unknown>>>;
};

async function specOperations(): Promise<string[]> {
  // The contract lives beside the repository (../shared), as on every development and CI machine.
  const file = path.join(repoRoot, '..', 'shared', 'spec', 'platform-api.md');
  const spec = await readFile(file, 'utf8').catch(() => {
    throw new Error(`the API spec is missing at ${file}: check out shared/ beside the repository`);
  });
  const section = spec.slice(spec.indexOf('## Endpoints'), spec.indexOf('### Routes served on an app'));
  return [...section.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| (\/[^ ]*) \|/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
}

/** docs/api/extensions.md: operations the spec does not show, each with its reason. */
async function extensionOperations(): Promise<string[]> {
  const text = await readFile(path.join(repoRoot, 'docs', 'api', 'extensions.md'), 'utf8');
  return [...text.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `(\/[^`]*)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

describe('OpenAPI document', () => {
  it('is valid OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1');
    assert.deepEqual(doc.servers, [{ url: '/api' }]);
  });

  it('has exactly the operations of the spec, plus the documented extensions', async () => {
    const fromSpec = await specOperations();
    assert.equal(fromSpec.length, 71);
    const extensions = await extensionOperations();
    assert.ok(extensions.length >= 1);
    const expected = [...fromSpec, ...extensions].sort();
    const actual = Object.entries(doc.paths)
      .flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    assert.deepEqual(actual, expected);
  });

  it('gives every operation an id, a tag, an error default, security and its action', () => {
    const ids = new Set<string>();
    for (const [p, methods] of Object.entries(doc.paths)) {
      for (const [method, o] of Object.entries(methods)) {
        const where = `${method.toUpperCase()} ${p}`;
        assert.ok(typeof o.operationId === 'string' && !ids.has(o.operationId), `${where}: unique operationId`);
        ids.add(o.operationId);
        assert.equal((o.tags as string[]).length, 1, where);
        const responses = o.responses as Record<string, { content?: Record<string, { schema: unknown }> }>;
        assert.deepEqual(responses.default?.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' }, where);
        const isPublic = [
          '/health',
          '/openapi.json',
          '/console/sign-in',
          '/console/auth',
          '/console/providers',
          '/console/passkeys/sign-in/options',
          '/console/passkeys/sign-in',
          '/console/idp/start',
          '/console/idp/finish',
          '/cli/logins',
          '/cli/logins/token',
        ].includes(p);
        assert.deepEqual(o.security, isPublic ? [] : [{ bearer: [] }], where);
        if (!isPublic) assert.match(String(o['x-svc-action']), /^(read|write|deploy|exec|admin)$/, where);
        const params = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        const declared = ((o.parameters as Array<{ name: string; in: string }> | undefined) ?? [])
          .filter((x) => x.in === 'path')
          .map((x) => x.name);
        assert.deepEqual(declared, params, `${where}: path parameters`);
      }
    }
  });

  it('describes the request body of every operation whose fields the spec states, required when it has required fields', () => {
    type Body = {
      required: boolean;
      content: Record<string, { schema: { properties?: Record<string, { type?: string }>; required?: string[] } }>;
    };
    const body = (p: string, m: string) => doc.paths[p]?.[m]?.requestBody as Body | undefined;
    const evalBody = body('/eval', 'post')!;
    assert.equal(evalBody.required, true);
    const evalSchema = evalBody.content['application/json']!.schema;
    assert.deepEqual(
      [evalSchema.properties?.runtime?.type, evalSchema.properties?.code?.type, evalSchema.properties?.network?.type],
      ['string', 'string', 'boolean'],
    );
    assert.deepEqual(evalSchema.required, ['runtime', 'code']);
    const createApp = body('/apps', 'post')!;
    assert.equal(createApp.required, true);
    assert.deepEqual(
      [
        createApp.content['application/json']!.schema.properties?.name?.type,
        createApp.content['application/json']!.schema.properties?.image?.type,
      ],
      ['string', 'string'],
    );
    // A body of only optional fields may be left out.
    assert.equal(body('/apps/{appID}/deploy', 'post')?.required, true, 'a deploy sends JSON or an upload');
    for (const [p, methods] of Object.entries(doc.paths)) {
      for (const [m, o] of Object.entries(methods)) {
        const b = o.requestBody as Body | undefined;
        if (!b) continue;
        const required = b.content['application/json']?.schema.required ?? [];
        if (required.length) assert.equal(b.required, true, `${m.toUpperCase()} ${p}: a body with required fields is required`);
      }
    }
  });

  it('documents the error schema and bearer security', () => {
    const c = (doc as unknown as { components: { schemas: { Error: unknown }; securitySchemes: { bearer: unknown } } }).components;
    assert.deepEqual((c.schemas.Error as { required: string[] }).required, ['error']);
    assert.deepEqual(c.securitySchemes.bearer, {
      type: 'http',
      scheme: 'bearer',
      description: (c.securitySchemes.bearer as { description: string }).description,
    });
  });
});
