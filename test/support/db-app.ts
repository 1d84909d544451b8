// A container app that keeps rows in its attached database: /write/<v> inserts, / lists, /env says
// whether it has DATABASE_URL. CommonJS through node -e; `pg` is in the runtime image's dependencies.
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
      const { rows } = await c.query('select v from notes order by v');
      r.end(rows.map((x) => x.v).join(','));
    } finally { await c.end(); }
  } catch (e) { r.statusCode = 500; r.end(String(e.message)); }
}).listen(process.env.PORT);
`;
