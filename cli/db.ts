// `svc db create|ls|attach|detach|rm|backup|backups|restore`: an account's databases
// (docs/api/data.md). create and restore wait until the server is Ready (or say why it failed),
// backup until the backup is stored or failed, unless --no-wait; ls and backups print a table or JSON.
import { body, type ApiClient, type paths } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, secondsOption, type CommandContext, type CommandGroup } from './command.js';
import { formatBytes, table } from './table.js';

/** A database as the API answers it (GET /databases). */
type DatabaseBody = paths['/databases']['get']['responses'][200]['content']['application/json']['databases'][number];
type CreateDatabaseBody = NonNullable<paths['/databases']['post']['requestBody']>['content']['application/json'];

const usage = `usage:
  svc db create NAME [--size BYTES] [--retain] [--no-wait] [--json]
                                               a new database; waits until it is Ready
  svc db ls [--json]                           the account's databases
  svc db attach NAME APP                       give APP's machines DATABASE_URL and PG* (as they are
                                               replaced)
  svc db detach APP                            take them away again
  svc db rm NAME                               delete a database (not one attached to an app)
  svc db backup NAME [--no-wait] [--json]      back up now; waits until the backup is stored
  svc db backups NAME [--json]                 the database's backups, newest first
  svc db restore BACKUP NEW-NAME [--size BYTES] [--no-wait] [--json]
                                               a new database loaded from a backup; waits until Ready
  --size BYTES  its volume's size (at least 128 MiB; default 1 GiB)
  --retain      keep its volume when the database is deleted (default: dropped with it)
  --timeout S   how long to wait (default 120 s)
example:
  svc db create orders && svc db attach orders shop`;

export interface DbOptions {
  json: boolean;
  wait: boolean;
  timeoutMs: number;
  size?: number | undefined;
  retain: boolean;
}

const databaseTable = (dbs: DatabaseBody[]) =>
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

async function dbCommand(api: ApiClient, ctx: CommandContext, command: string, args: string[], o: DbOptions): Promise<void> {
  const print = (d: DatabaseBody) => ctx.out(o.json ? JSON.stringify(d) : `${d.name}: ${d.phase}${d.message ? ` (${d.message})` : ''}`);
  const [name, app] = args;
  const need = (form: string) => {
    if (!name) throw new GroupUsageError(`svc db ${form}`, usage);
    return name;
  };
  const waitReady = async (db: DatabaseBody) => {
    const deadline = Date.now() + o.timeoutMs;
    while (o.wait && db.phase !== 'Ready') {
      if (db.phase === 'Failed') throw new Error(`database ${db.name} failed: ${db.message ?? 'no reason given'}`);
      if (Date.now() > deadline) throw new Error(`database ${db.name} not ready after ${o.timeoutMs / 1000} s: ${db.message ?? db.phase}`);
      await ctx.sleep(500);
      db = (await body(api.GET('/databases'))).databases.find((d) => d.name === db.name) ?? db;
    }
    return db;
  };
  const create = async (request: CreateDatabaseBody) => print(await waitReady(await body(api.POST('/databases', { body: request }))));
  const backupsOf = async (db: string) => (await body(api.GET('/databases/{name}/backups', { params: { path: { name: db } } }))).backups;
  switch (command) {
    case 'ls': {
      const { databases } = await body(api.GET('/databases'));
      // --json: the list itself, as it has always been printed.
      if (o.json) ctx.out(JSON.stringify(databases));
      else databaseTable(databases).forEach((l) => ctx.out(l));
      return;
    }
    case 'create': {
      const db = need('create NAME');
      return create({
        name: db,
        ...(o.size !== undefined ? { storage_bytes: o.size } : {}),
        deletion_policy: o.retain ? 'retain' : 'drop',
      });
    }
    case 'backup': {
      const db = need('backup NAME');
      const before = new Set((await backupsOf(db)).map((b) => b.id));
      const { requested_at } = await body(api.POST('/databases/{name}/backups', { params: { path: { name: db } } }));
      if (!o.wait) return ctx.out(`backup of ${db} requested at ${requested_at}`);
      const deadline = Date.now() + o.timeoutMs;
      for (;;) {
        const made = (await backupsOf(db)).find((b) => !before.has(b.id));
        if (made) {
          ctx.out(
            o.json
              ? JSON.stringify(made)
              : `${made.id}  ${made.status}${made.bytes !== null ? `  ${made.bytes} bytes` : ''}${made.error ? `  ${made.error}` : ''}`,
          );
          if (made.status !== 'done') throw new Error(`backup of ${db} failed: ${made.error ?? 'no reason given'}`);
          return;
        }
        if (Date.now() > deadline)
          throw new Error(`no backup of ${db} within ${o.timeoutMs / 1000} s (GET /databases/${db}/backups shows it when it lands)`);
        await ctx.sleep(1000);
      }
    }
    case 'backups': {
      const backups = await backupsOf(need('backups NAME'));
      if (o.json) return ctx.out(JSON.stringify(backups));
      table([
        ['ID', 'STATUS', 'BYTES', 'TAKEN', 'ERROR'],
        ...backups.map((b) => [b.id, b.status, b.bytes === null ? '-' : String(b.bytes), b.created_at, b.error ?? '']),
      ]).forEach((l) => ctx.out(l));
      return;
    }
    case 'restore': {
      const [backup, into] = args;
      if (!backup || !into) throw new GroupUsageError('svc db restore BACKUP NEW-NAME (a restore makes a new database)', usage);
      return create({ name: into, restore_from: { backup }, ...(o.size !== undefined ? { storage_bytes: o.size } : {}) });
    }
    case 'attach': {
      if (!name || !app) throw new GroupUsageError('svc db attach NAME APP', usage);
      const r = await body(api.PUT('/apps/{appID}/database', { params: { path: { appID: app } }, body: { name } }));
      ctx.out(o.json ? JSON.stringify(r) : `${name} attached to ${r.app}: its machines get DATABASE_URL as they are replaced`);
      return;
    }
    case 'detach': {
      const of = need('detach APP');
      await api.DELETE('/apps/{appID}/database', { params: { path: { appID: of } } });
      ctx.out(`detached from ${of}`);
      return;
    }
    case 'rm': {
      const db = need('rm NAME');
      await api.DELETE('/databases/{name}', { params: { path: { name: db } } });
      ctx.out(`${db} deleted`);
      return;
    }
    default:
      throw new GroupUsageError(`unknown db command: ${command}`, usage);
  }
}

export const dbGroup: CommandGroup = {
  name: 'db',
  synopsis: `  svc db create NAME [--size BYTES] [--retain] [--no-wait] [--json] | ls [--json] | rm NAME
                                              the account's databases; create waits until Ready
  svc db attach NAME APP | detach APP         give an app DATABASE_URL and PG* (or take them away)
  svc db backup NAME [--no-wait] | backups NAME [--json] | restore BACKUP NEW-NAME
                                              back up now (waits until stored), list backups,
                                              restore one into a new database (waits until Ready)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      'no-wait': { type: 'boolean' },
      timeout: { type: 'string' },
      size: { type: 'string' },
      retain: { type: 'boolean' },
    });
    const [command, ...rest] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const size = values.size === undefined ? undefined : Number(values.size);
    if (size !== undefined && !Number.isInteger(size)) throw new GroupUsageError('--size is a number of bytes', usage);
    await dbCommand(connect(ctx, values.token), ctx, command, rest, {
      json: values.json === true,
      wait: !values['no-wait'],
      timeoutMs: (secondsOption(values.timeout, '--timeout', usage) ?? 120) * 1000,
      size,
      retain: values.retain === true,
    });
    return 0;
  },
};
