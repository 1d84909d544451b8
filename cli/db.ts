// `svc db create|ls|attach|detach|rm|backup|backups|restore`: an account's databases
// (docs/api/data.md). create and restore wait until the server is Ready (or say why it failed),
// backup until the backup is stored or failed, unless --no-wait; ls and backups print a table or JSON.
import { callJson, request, type ApiTarget } from './api.js';
import { formatBytes, table } from './table.js';
import { UsageError } from './token-commands.js';

interface DatabaseRecord {
  name: string;
  phase: string;
  message: string | null;
  attached_to: string | null;
  host: string | null;
  port: number | null;
  storage_bytes: number;
  used_bytes: number | null;
  deletion_policy: string;
}

interface BackupRecord {
  id: string;
  database: string;
  status: string;
  bytes: number | null;
  error: string | null;
  created_at: string;
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

const databaseTable = (dbs: DatabaseRecord[]) =>
  table([
    ['NAME', 'PHASE', 'APP', 'SIZE', 'USED', 'ON DELETE'],
    ...dbs.map((d) => [
      d.name,
      d.phase,
      d.attached_to ?? '-',
      formatBytes(d.storage_bytes),
      d.used_bytes === null ? '-' : formatBytes(d.used_bytes),
      d.deletion_policy,
    ]),
  ]);

export async function dbCommand(t: ApiTarget, command: string | undefined, args: string[], o: DbOptions): Promise<void> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const print = (d: DatabaseRecord) => o.out(o.json ? JSON.stringify(d) : `${d.name}: ${d.phase}${d.message ? ` (${d.message})` : ''}`);
  const [name, app] = args;
  const waitReady = async (db: DatabaseRecord) => {
    const deadline = Date.now() + o.timeoutMs;
    while (o.wait && db.phase !== 'Ready') {
      if (db.phase === 'Failed') throw new Error(`database ${db.name} failed: ${db.message ?? 'no reason given'}`);
      if (Date.now() > deadline) throw new Error(`database ${db.name} not ready after ${o.timeoutMs / 1000} s: ${db.message ?? db.phase}`);
      await sleep(500);
      db = (await callJson<{ databases: DatabaseRecord[] }>(t, 'GET', '/databases')).databases.find((d) => d.name === db.name) ?? db;
    }
    return db;
  };
  const backupsOf = async (db: string) =>
    (await callJson<{ backups: BackupRecord[] }>(t, 'GET', `/databases/${encodeURIComponent(db)}/backups`)).backups;
  switch (command) {
    case 'ls': {
      const { databases } = await callJson<{ databases: DatabaseRecord[] }>(t, 'GET', '/databases');
      if (o.json) o.out(JSON.stringify(databases));
      else databaseTable(databases).forEach((l) => o.out(l));
      return;
    }
    case 'create': {
      if (!name) throw new UsageError('name the database: svc db create NAME');
      print(
        await waitReady(
          await callJson<DatabaseRecord>(t, 'POST', '/databases', {
            name,
            ...(o.size !== undefined ? { storage_bytes: o.size } : {}),
            deletion_policy: o.retain ? 'retain' : 'drop',
          }),
        ),
      );
      return;
    }
    case 'backup': {
      if (!name) throw new UsageError('svc db backup NAME');
      const before = new Set((await backupsOf(name)).map((b) => b.id));
      const { requested_at } = await callJson<{ requested_at: string }>(t, 'POST', `/databases/${encodeURIComponent(name)}/backups`);
      if (!o.wait) return o.out(`backup of ${name} requested at ${requested_at}`);
      const deadline = Date.now() + o.timeoutMs;
      for (;;) {
        const made = (await backupsOf(name)).find((b) => !before.has(b.id));
        if (made) {
          o.out(
            o.json
              ? JSON.stringify(made)
              : `${made.id}  ${made.status}${made.bytes !== null ? `  ${made.bytes} bytes` : ''}${made.error ? `  ${made.error}` : ''}`,
          );
          if (made.status !== 'done') throw new Error(`backup of ${name} failed: ${made.error ?? 'no reason given'}`);
          return;
        }
        if (Date.now() > deadline)
          throw new Error(`no backup of ${name} within ${o.timeoutMs / 1000} s (GET /databases/${name}/backups shows it when it lands)`);
        await sleep(1000);
      }
    }
    case 'backups': {
      if (!name) throw new UsageError('svc db backups NAME');
      const backups = await backupsOf(name);
      if (o.json) return o.out(JSON.stringify(backups));
      table([
        ['ID', 'STATUS', 'BYTES', 'TAKEN', 'ERROR'],
        ...backups.map((b) => [b.id, b.status, b.bytes === null ? '-' : String(b.bytes), b.created_at, b.error ?? '']),
      ]).forEach((l) => o.out(l));
      return;
    }
    case 'restore': {
      const [backup, into] = args;
      if (!backup || !into) throw new UsageError('svc db restore BACKUP NEW-NAME (a restore makes a new database)');
      print(
        await waitReady(
          await callJson<DatabaseRecord>(t, 'POST', '/databases', {
            name: into,
            restore_from: { backup },
            ...(o.size !== undefined ? { storage_bytes: o.size } : {}),
          }),
        ),
      );
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
