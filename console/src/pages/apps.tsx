// The account's apps: a search box filtering by name, and one page of 25 rendered at a time (the
// list itself is fetched once, 500 apps a request), each app linking to its overview.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { listAllApps, type App } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { filterByName, pageOf } from '../list.js';
import { hrefOf } from '../router.js';
import { statusInWords } from '../status.js';
import { TableHead } from '../components/table-head.js';

export function AppsPage() {
  const [apps, setApps] = useState<App[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(1);
  useEffect(() => {
    let live = true;
    listAllApps((sofar) => live && setApps([...sofar])).catch((err: unknown) => live && setError(err));
    return () => {
      live = false;
    };
  }, []);
  const matching = useMemo(() => filterByName(apps ?? [], query), [apps, query]);
  const shown = pageOf(matching, page);
  const count = (n: number) => `${n.toLocaleString('en')} app${n === 1 ? '' : 's'}`;
  return (
    <>
      <PageHeading title="Apps">Apps</PageHeading>
      <div class="toolbar">
        <label for="search">Search apps by name</label>
        <input
          id="search"
          type="search"
          autocomplete="off"
          spellcheck={false}
          value={query}
          onInput={(e) => {
            setQuery(e.currentTarget.value);
            setPage(1);
          }}
        />
      </div>
      {error !== undefined && <ErrorMessage doing="Listing apps" error={error} />}
      {apps === undefined && error === undefined && <p role="status">Loading apps…</p>}
      {apps !== undefined && (
        <>
          <p role="status" id="apps-count">
            {matching.length === 0
              ? query.trim()
                ? `No app’s name contains “${query.trim()}”.`
                : 'No apps yet: create one with svc apps create NAME.'
              : `${count(matching.length)}${query.trim() ? ` matching “${query.trim()}”` : ''}; showing ${shown.first}–${shown.last}.`}
          </p>
          {shown.items.length > 0 && (
            <table class="apps">
              <caption class="visually-hidden">
                Apps, page {shown.page} of {shown.pages}
              </caption>
              <TableHead columns={['Name', 'Status', 'URL']} />
              <tbody>
                {shown.items.map((app) => {
                  const status = statusInWords(app);
                  return (
                    <tr key={app.id}>
                      <th scope="row">
                        <a href={hrefOf({ page: 'app', name: app.name })}>{app.name}</a>
                      </th>
                      <td>
                        <span class={`dot ${status.tone}`} aria-hidden="true" />
                        {status.text}
                      </td>
                      <td>{app.url ? <a href={app.url}>{app.url}</a> : <span class="muted">none yet</span>}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
          {shown.pages > 1 && (
            <nav class="pager" aria-label="Pages of apps">
              <button type="button" class="secondary" disabled={shown.page <= 1} onClick={() => setPage(shown.page - 1)}>
                Previous page
              </button>
              <span>
                Page {shown.page} of {shown.pages}
              </span>
              <button type="button" class="secondary" disabled={shown.page >= shown.pages} onClick={() => setPage(shown.page + 1)}>
                Next page
              </button>
            </nav>
          )}
        </>
      )}
    </>
  );
}
