// GET /apps/{appID}/data (an extension: the spec has no operation for it): every record an HTML app's
// data bindings stored (docs/api/html-data.md), as NDJSON, one record a line with its collection and
// the platform's stamps, read a page at a time and streamed, never held whole. The owner's copy of
// their users' data: to keep, to move, to answer a request for it.
import { Readable } from 'node:stream';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import { resolveApp, type AppLookup } from '../app-access.js';

type Deps = AppLookup & Pick<ApiDeps, 'htmlData'>;

export function appDataOperations(s: Deps): Operation[] {
  return [
    op({
      method: 'GET',
      path: '/apps/{appID}/data',
      operationId: 'exportAppData',
      tag: 'apps',
      summary: "Export an HTML app's data as NDJSON (extension)",
      action: 'read',
      handler: async ({ caller, params }) => {
        const app = await resolveApp(s, caller, params.appID!);
        const records = s.htmlData.all(app.id);
        async function* lines(): AsyncGenerator<string> {
          for await (const r of records)
            yield (
              JSON.stringify({
                collection: r.collection,
                _id: r.id,
                ...(r.name !== null ? { _name: r.name } : {}),
                _author: r.author,
                _created: r.created.toISOString(),
                _updated: r.updated.toISOString(),
                ...r.fields,
              }) + '\n'
            );
        }
        return {
          body: Readable.from(lines()),
          headers: {
            'Content-Type': 'application/x-ndjson; charset=utf-8',
            'Cache-Control': 'no-store',
            'X-Content-Type-Options': 'nosniff',
            'Content-Disposition': `attachment; filename="${app.name}-data.ndjson"`,
          },
        };
      },
    }),
  ];
}
