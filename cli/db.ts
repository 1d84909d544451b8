// `svc db create|ls|attach|detach|rm`: an account's databases (docs/api/data.md). create waits
// until the server is Ready (or says why it failed) unless --no-wait; ls prints a table or JSON.
import { callJson, request, type ApiTarget } from './api.js';
import { UsageError } from './token-commands.js';

interface DatabaseRecord {
  name: string;
  phase: string;
  message: string | null;
  attached_to: string | null;
  host: string | null;
  port: number | null;
  storage_bytes: number;
  deletion_policy: string;
}

export interface DbOptions {
  json: boolean;
  wait: boolean;
  timeoutMs: number;
  size?: number | undefined;
  retain: boolean;
  out: (line: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

const table = (dbs: DatabaseRecord[]) => {
  const rows = [['NAME', 'PHASE', 'APP', 'SIZE', 'ON DELETE'], ...dbs.map((d) => [d.name, d.phase, d.attached_to ?? '-', `${Math.round(d.storage_bytes / 1048576)} MiB`, d.deletion_policy])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
};

export async function dbCommand(t: ApiTarget, command: string | undefined, args: string[], o: DbOptions): Promise<void> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const print = (d: DatabaseRecord) => o.out(o.json ? JSON.stringify(d) : `${d.name}: ${d.phase}${d.message ? ` (${d.message})` : ''}`);
  const [name, app] = args;
  switch (command) {
    case 'ls': {
      const { databases } = await callJson<{ databases: DatabaseRecord[] }>(t, 'GET', '/databases');
      if (o.json) o.out(JSON.stringify(databases));
      else table(databases).forEach((l) => o.out(l));
      return;
    }
    case 'create': {
      if (!name) throw new UsageError('name the database: svc db create NAME');
      let db = await callJson<DatabaseRecord>(t, 'POST', '/databases', { name, ...(o.size !== undefined ? { storage_bytes: o.size } : {}), deletion_policy: o.retain ? 'retain' : 'drop' });
      const deadline = Date.now() + o.timeoutMs;
      while (o.wait && db.phase !== 'Ready') {
        if (db.phase === 'Failed') throw new Error(`database ${name} failed: ${db.message ?? 'no reason given'}`);
        if (Date.now() > deadline) throw new Error(`database ${name} not ready after ${o.timeoutMs / 1000} s: ${db.message ?? db.phase}`);
        await sleep(500);
        db = (await callJson<{ databases: DatabaseRecord[] }>(t, 'GET', '/databases')).databases.find((d) => d.name === name) ?? db;
      }
      print(db);
      return;
    }
    case 'attach': {
      if (!name || !app) throw new UsageError('svc db attach NAME APP');
      const r = await callJson<{ app: string; database: DatabaseRecord }>(t, 'PUT', `/apps/${encodeURIComponent(app)}/database`, { name });
      o.out(o.json ? JSON.stringify(r) : `${name} attached to ${r.app}: its machines get DATABASE_URL as they are replaced`);
      return;
    }
    case 'detach': {
      if (!name) throw new UsageError('svc db detach APP');
      await request(t, 'DELETE', `/apps/${encodeURIComponent(name)}/database`);
      o.out(`detached from ${name}`);
      return;
    }
    case 'rm': {
      if (!name) throw new UsageError('svc db rm NAME');
      await request(t, 'DELETE', `/databases/${encodeURIComponent(name)}`);
      o.out(`${name} deleted`);
      return;
    }
    default:
      throw new UsageError(`unknown db command: ${command ?? '(none)'}`);
  }
}
