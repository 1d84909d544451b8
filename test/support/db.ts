// A fresh PostgreSQL database per test file, on the server `make test` starts, dropped afterwards.
import { randomBytes } from 'node:crypto';
import { connect, type Db } from '../../lib/db/connection.js';

export async function freshDatabase(): Promise<{ url: string; db: Db; dispose: () => Promise<void> }> {
  const adminUrl = process.env.SVC_TEST_PG_ADMIN_URL;
  if (!adminUrl) throw new Error('SVC_TEST_PG_ADMIN_URL is not set: run the integration tests through `make test`');
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = connect(adminUrl, { poolMax: 1 });
  await admin.raw('CREATE DATABASE ??', [name]);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = connect(url.toString());
  return {
    url: url.toString(),
    db,
    dispose: async () => {
      await db.destroy();
      await admin.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
      await admin.destroy();
    },
  };
}
