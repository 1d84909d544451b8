// `svc tokens ls|create|rm`: the account's API tokens on the server (GET/POST /account/tokens,
// DELETE /account/tokens/{nonce}). Narrowing a token without the server is `svc token attenuate`
// (cli/token-commands.ts). A new token is printed once, alone on stdout, so it can be captured.
import { body, type paths } from '../lib/client/index.js';
import { confirm, connect, GroupUsageError, listOption, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { table } from './table.js';

type TokenBody = paths['/account/tokens']['get']['responses'][200]['content']['application/json']['tokens'][number];
type CreateTokenBody = NonNullable<paths['/account/tokens']['post']['requestBody']>['content']['application/json'];

/** The actions a token can be restricted to: every one the API's document lists (the compiler checks none is missing). */
type Action = NonNullable<CreateTokenBody['actions']>[number];
const actionSet: Record<Action, true> = { read: true, deploy: true, write: true, exec: true, admin: true };
const knownActions = Object.keys(actionSet) as Action[];

const usage = `usage:
  svc tokens ls [--json]                       the account's tokens: live, expired and revoked
  svc tokens create [--name N] [--apps a,b] [--actions read,deploy] [--expires-in 30d] [--json]
                                               a new token, printed once on stdout; restricted to the
                                               apps and actions given (and to the token it is made
                                               with), expiring after --expires-in (default 90d)
  svc tokens rm ID [--yes]                     revoke token ID, and every token made from it (asks first)
Actions: ${knownActions.join(', ')}. Narrowing a token offline: svc token attenuate.
example:
  svc tokens create --name ci --apps shop --actions read,deploy --expires-in 30d > ci.token`;

const live = (t: TokenBody, now: number) => !t.revoked && Date.parse(t.expires_at) > now;

/** `svc tokens ls`: one line per token, its restrictions as the API words them. */
export function tokensTable(tokens: TokenBody[], now: number): string[] {
  if (tokens.length === 0) return ['no tokens; make one: svc tokens create --name NAME'];
  return table([
    ['ID', 'NAME', 'STATE', 'EXPIRES', 'LAST USED', 'RESTRICTIONS'],
    ...tokens.map((t) => [
      t.nonce,
      t.name ?? '-',
      // The token this command ran with is marked, as `git branch` marks the current one.
      (t.revoked ? 'revoked' : live(t, now) ? 'live' : 'expired') + (t.current ? ' (this one)' : ''),
      t.expires_at,
      t.last_used_at ?? 'never',
      t.restrictions.join('; ') || '-',
    ]),
  ]);
}

export const tokensGroup: CommandGroup = {
  name: 'tokens',
  synopsis: `  svc tokens ls | create [--apps a,b] [--actions read,deploy] [--expires-in 30d] | rm ID
                                              the account's API tokens on the server (a new one is
                                              printed once)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      name: { type: 'string' },
      apps: { type: 'string' },
      actions: { type: 'string' },
      'expires-in': { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
    });
    const [command, id] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const api = () => connect(ctx, values.token);
    switch (command) {
      case 'ls': {
        const answer = await body(api().GET('/account/tokens'));
        show(ctx, json, answer, (a) => tokensTable(a.tokens, Date.now()));
        return 0;
      }
      case 'create': {
        const apps = listOption(values.apps, '--apps', usage);
        const actions = listOption(values.actions, '--actions', usage);
        const unknown = actions?.filter((a) => !knownActions.some((k) => k === a));
        if (unknown?.length) throw new GroupUsageError(`unknown actions: ${unknown.join(', ')} (one of ${knownActions.join(', ')})`, usage);
        const request: CreateTokenBody = {
          ...(values.name ? { name: values.name } : {}),
          ...(apps ? { apps } : {}),
          ...(actions ? { actions: knownActions.filter((k) => actions.includes(k)) } : {}),
          ...(values['expires-in'] ? { expires_in: values['expires-in'] } : {}),
        };
        const made = await body(api().POST('/account/tokens', { body: request }));
        if (json) ctx.out(JSON.stringify(made));
        else {
          // The token alone on stdout (to capture); what it is, on stderr.
          ctx.out(made.token);
          ctx.err(`token ${made.nonce}${made.name ? ` (${made.name})` : ''}, expires ${made.expires_at}: ${made.restrictions.join('; ')}`);
          ctx.err('it is shown only now; revoke it with: svc tokens rm ' + made.nonce);
        }
        return 0;
      }
      case 'rm': {
        if (!id) throw new GroupUsageError('svc tokens rm ID', usage);
        if (!(await confirm(ctx, `revoke token ${id} and every token made from it?`, values.yes === true))) {
          ctx.err('svc: not revoked');
          return 1;
        }
        await api().DELETE('/account/tokens/{nonce}', { params: { path: { nonce: id } } });
        if (!json) ctx.out(`revoked token ${id} and every token made from it`);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown tokens command: ${command}`, usage);
    }
  },
};
