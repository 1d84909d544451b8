// A container app that keeps rows in its attached database: /write/<v> inserts, / lists, /env says
// whether it has DATABASE_URL, /fill/<MB> adds bulk rows and answers the database's size. CommonJS through node -e; `pg` is in the runtime image's dependencies.
export const dbAppScript = `
const http = require('http');
const { Client } = require('/app/node_modules/pg');
http.createServer(async (q, r) => {
  try {
    if (q.url === '/env') return r.end(JSON.stringify({ url: process.env.DATABASE_URL ? process.env.DATABASE_URL.replace(/:[^:@]*@/, ':***@') : null, host: process.env.PGHOST || null }));
    if (!process.env.DATABASE_URL) { r.statusCode = 503; return r.end('no database'); }
    const c = new Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    try {
      await c.query('create table if not exists notes (v text)');
      if (q.url.startsWith('/write/')) await c.query('insert into notes values ($1)', [q.url.slice(7)]);
      // /fill/<MB>: about that many megabytes of rows more (1 KiB each), for benchmarks.
      if (q.url.startsWith('/fill/')) {
        await c.query('create table if not exists fill (b text)');
        await c.query("insert into fill select repeat(md5(i::text), 32) from generate_series(1, $1::int * 1024) i", [Number(q.url.slice(6))]);
        const { rows } = await c.query('select pg_database_size(current_database()) as bytes');
        return r.end(String(rows[0].bytes));
      }
      const { rows } = await c.query('select v from notes order by v');
      r.end(rows.map((x) => x.v).join(','));
    } finally { await c.end(); }
  } catch (e) { r.statusCode = 500; r.end(String(e.message)); }
}).listen(process.env.PORT);
`;
