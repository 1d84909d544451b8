// `svc apps ls|get|create|rm|fork|expiry`: the account's apps (GET/POST /apps, GET/DELETE
// /apps/{appID}, POST /apps/{appID}/fork, PUT/DELETE /apps/{appID}/expiry). rm asks first.
import { body, type paths } from '../lib/client/index.js';
import { confirm, connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { shellWord } from './domains.js';
import { table } from './table.js';

/** An app as the API answers it (GET /apps/{appID}). */
export type AppBody = paths['/apps/{appID}']['get']['responses'][200]['content']['application/json'];
type CreateAppBody = NonNullable<paths['/apps']['post']['requestBody']>['content']['application/json'];
type ForkAnswer = paths['/apps/{appID}/fork']['post']['responses'][201]['content']['application/json'];

const usage = `usage:
  svc apps ls [--json]                         the account's apps (previews: svc previews ls APP)
  svc apps get APP [--json]                    one app: status, machines, URL, services, expiry
  svc apps create NAME [--image REF] [--port N] [--machines N] [--json]
                                               create an app (with --image, a container service)
  svc apps rm APP [--yes]                      delete an app, its machines, previews and domains
                                               (asks first; without a terminal, needs --yes)
  svc apps fork APP NEW [--data] [--json]      a copy of APP named NEW, deployed as APP is
                                               (--data: with its HTML data records too)
  svc apps expiry APP (--in DURATION | --at TIME | --clear) [--json]
                                               delete the app by itself at a time (7d, 12h, or RFC3339),
                                               or never
example:
  svc apps create shop --image nginx:1.27 --port 80 && svc apps get shop`;

/** `svc apps ls`: one line per app. */
export function appsTable(apps: AppBody[]): string[] {
  if (apps.length === 0) return ['no apps yet; create one: svc apps create NAME (or deploy a directory: svc deploy NAME DIR)'];
  return table([
    ['NAME', 'STATUS', 'READY', 'KIND', 'URL', 'EXPIRES'],
    ...apps.map((a) => [a.name, a.status, a.ready, a.kind ?? '-', a.url ?? '-', a.expires_at ?? '-']),
  ]);
}

/** `svc apps get`: the app's fields, then its services when it has several. */
export function describeApp(a: AppBody): string[] {
  const lines = table([
    ['name:', a.name],
    ['id:', a.id],
    ['status:', `${a.status} (${a.ready} machines ready)`],
    ['kind:', a.kind ?? '-'],
    ['image:', a.image ?? '-'],
    ['url:', a.url ?? '-'],
    ['deploy:', a.current_deploy ?? '-'],
    ['rollout:', a.rollout ?? '-'],
    ['expires:', a.expires_at ?? 'never'],
    ['created:', a.created_at ?? '-'],
  ]);
  if (a.services?.length) {
    lines.push(
      '',
      ...table([
        ['SERVICE', 'PUBLIC', 'READY', 'IMAGE', 'DEPLOY'],
        ...a.services.map((s) => [s.name, s.public ? 'yes' : 'no', s.ready, s.image, s.deploy ?? '-']),
      ]),
    );
  }
  return lines;
}

/** A whole number of an option, within bounds the API also checks (so the mistake is told before a call). */
function intOption(value: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new GroupUsageError(`${flag} is a whole number from ${min} to ${max}`, usage);
  return n;
}

export const appsGroup: CommandGroup = {
  name: 'apps',
  synopsis: `  svc apps ls | get APP | create NAME [--image REF] | rm APP [--yes] | fork APP NEW | expiry APP ...
                                              the account's apps: list, show, create, delete, copy,
                                              delete by itself at a time`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      yes: { type: 'boolean', short: 'y' },
      image: { type: 'string' },
      port: { type: 'string' },
      machines: { type: 'string' },
      in: { type: 'string' },
      at: { type: 'string' },
      clear: { type: 'boolean' },
      data: { type: 'boolean' },
    });
    const [command, app, other] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const need = (form: string) => {
      if (!app) throw new GroupUsageError(`svc apps ${form}`, usage);
      return app;
    };
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'ls': {
        // Every page (next_after), as one list.
        const apps: AppBody[] = [];
        for (let after: string | undefined; ;) {
          const page = await body(api().GET('/apps', { params: { query: { limit: 500, ...(after ? { after } : {}) } } }));
          apps.push(...page.apps);
          if (!page.next_after) break;
          after = page.next_after;
        }
        show(ctx, json, { apps }, (a) => appsTable(a.apps));
        return 0;
      }
      case 'get': {
        const name = need('get APP');
        show(ctx, json, await body(api().GET('/apps/{appID}', { params: { path: { appID: name } } })), describeApp);
        return 0;
      }
      case 'create': {
        const name = need('create NAME [--image REF] [--port N] [--machines N]');
        const port = intOption(values.port, '--port', 1, 65535);
        const machines = intOption(values.machines, '--machines', 0, 20);
        const request: CreateAppBody = {
          name,
          ...(values.image ? { image: values.image } : {}),
          ...(port !== undefined ? { port } : {}),
          ...(machines !== undefined ? { machines } : {}),
        };
        const created = await body(api().POST('/apps', { body: request }));
        show(ctx, json, created, (a) => [
          `created app ${a.name} (${a.id})`,
          a.image ? `it runs ${a.image}; see it with: svc apps get ${shellWord(a.name)}` : `deploy it: svc deploy ${shellWord(a.name)} DIR`,
        ]);
        return 0;
      }
      case 'rm': {
        const name = need('rm APP [--yes]');
        const asked = `delete app ${name} with its machines, previews and domains? This cannot be undone.`;
        if (!(await confirm(ctx, asked, values.yes === true))) {
          ctx.err('svc: not deleted');
          return 1;
        }
        await api().DELETE('/apps/{appID}', { params: { path: { appID: name } } });
        // 204, no body: --json prints nothing.
        if (!json) ctx.out(`deleted app ${name}`);
        return 0;
      }
      case 'fork': {
        if (!app || !other) throw new GroupUsageError('svc apps fork APP NEW', usage);
        const forked = await body(
          api().POST('/apps/{appID}/fork', {
            params: { path: { appID: app } },
            body: { name: other, ...(values.data ? { data: true } : {}) },
          }),
        );
        show(ctx, json, forked, (f: ForkAnswer) => [
          `forked ${app} into ${f.app.name} (${f.app.id})${f.data_records !== undefined ? `, with ${f.data_records} data records` : ''}`,
          f.deploy
            ? `deploy ${f.deploy.id} is ${f.deploy.status}; follow it: svc apps get ${shellWord(f.app.name)}`
            : 'nothing deployed yet',
        ]);
        return 0;
      }
      case 'expiry': {
        const name = need('expiry APP (--in DURATION | --at TIME | --clear)');
        const given = [values.in, values.at, values.clear].filter((v) => v !== undefined).length;
        if (given !== 1) throw new GroupUsageError('give one of --in DURATION, --at TIME, --clear', usage);
        const path = { params: { path: { appID: name } } };
        if (values.clear) {
          await api().DELETE('/apps/{appID}/expiry', path);
          if (!json) ctx.out(`app ${name} no longer expires`);
          return 0;
        }
        const set = await body(
          api().PUT('/apps/{appID}/expiry', { ...path, body: values.in !== undefined ? { ttl: values.in } : { expires_at: values.at! } }),
        );
        show(ctx, json, set, (e) => [`app ${name} is deleted at ${e.expires_at}`]);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown apps command: ${command}`, usage);
    }
  },
};
