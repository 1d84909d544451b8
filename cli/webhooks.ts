// `svc webhooks ls|add|rm|enable|rotate-secret|deliveries|delivery|redeliver`: the account's
// webhooks (under /account/webhooks, docs/api/webhooks.md) and what was sent to them. A new or
// rotated secret is printed once, alone on stdout, so it can be captured.
import { body, type paths } from '../lib/client/index.js';
import { confirm, connect, GroupUsageError, listOption, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { table } from './table.js';

type WebhookBody = paths['/account/webhooks']['get']['responses'][200]['content']['application/json']['webhooks'][number];
type DeliveryBody =
  paths['/account/webhooks/{webhookID}/deliveries']['get']['responses'][200]['content']['application/json']['deliveries'][number];
type DeliveryDetail =
  paths['/account/webhooks/{webhookID}/deliveries/{deliveryID}']['get']['responses'][200]['content']['application/json'];
type DeliveryStatus = NonNullable<NonNullable<paths['/account/webhooks/{webhookID}/deliveries']['get']['parameters']['query']>['status']>;
const statusSet: Record<DeliveryStatus, true> = { pending: true, succeeded: true, failed: true, canceled: true };

const usage = `usage:
  svc webhooks ls [--json]                     the account's webhooks: URL, events, whether failing
  svc webhooks add URL [--events deploy.live,app.*] [--description D] [--json]
                                               a webhook for these event kinds (default all); its
                                               signing secret is printed once on stdout
  svc webhooks rm ID [--yes]                   delete a webhook (asks first)
  svc webhooks enable ID [--json]              send to a webhook disabled after failing again
  svc webhooks rotate-secret ID [--json]       a new signing secret, printed once (the old one
                                               signs too, for a while)
  svc webhooks deliveries ID [--status S] [--limit N] [--before EVENT] [--json]
                                               what was sent, newest first (S: ${Object.keys(statusSet).join(', ')});
                                               --before: the page before an event id
  svc webhooks delivery ID DELIVERY [--json]   one delivery: its body and every attempt
  svc webhooks redeliver ID DELIVERY [--json]  send a delivery again
example:
  svc webhooks add https://ci.example/hooks/svc --events deploy.live,deploy.failed`;

export function webhooksTable(webhooks: WebhookBody[]): string[] {
  if (webhooks.length === 0) return ['no webhooks; add one: svc webhooks add URL --events deploy.live'];
  return table([
    ['ID', 'URL', 'EVENTS', 'STATE', 'DESCRIPTION'],
    ...webhooks.map((w) => [
      w.id,
      w.url,
      w.events.join(',') || '*',
      w.disabled_at ? `disabled: ${w.disabled_reason ?? '-'}` : w.failing_since ? `failing since ${w.failing_since}` : 'ok',
      w.description ?? '-',
    ]),
  ]);
}

export function deliveriesTable(deliveries: DeliveryBody[]): string[] {
  if (deliveries.length === 0) return ['no deliveries'];
  return table([
    ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST', 'NEXT', 'ERROR'],
    ...deliveries.map((d) => [
      d.id,
      `${d.event_id} ${d.event_type}`,
      d.status,
      String(d.attempts),
      d.last_attempt_at ? `${d.last_attempt_at}${d.last_status !== null ? ` (${d.last_status})` : ''}` : '-',
      d.next_attempt_at ?? '-',
      d.last_error ?? '-',
    ]),
  ]);
}

export function describeDelivery(d: DeliveryDetail): string[] {
  return [
    `delivery ${d.id} of event ${d.event_id} (${d.event_type}): ${d.status}, ${d.attempts} attempts`,
    ...(d.next_attempt_at ? [`next attempt at ${d.next_attempt_at}`] : []),
    '',
    ...(d.attempt_log.length
      ? table([
          ['ATTEMPT', 'AT', 'MS', 'STATUS', 'ERROR', 'RESPONSE'],
          ...d.attempt_log.map((a) => [
            String(a.attempt),
            a.attempted_at,
            String(a.duration_ms),
            a.status === null ? '-' : String(a.status),
            a.error ?? '-',
            a.response_excerpt?.replace(/\s+/g, ' ').slice(0, 60) ?? '-',
          ]),
        ])
      : ['no attempts yet']),
    '',
    'body:',
    d.payload,
  ];
}

export const webhooksGroup: CommandGroup = {
  name: 'webhooks',
  synopsis: `  svc webhooks ls | add URL [--events a,b] | rm ID | enable ID | rotate-secret ID
  svc webhooks deliveries ID | delivery ID DELIVERY | redeliver ID DELIVERY
                                              the account's webhooks, and what was sent to them`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      events: { type: 'string' },
      description: { type: 'string' },
      status: { type: 'string' },
      limit: { type: 'string' },
      before: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
    });
    const [command, id, delivery] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const api = () => connect(ctx, values.token);
    const need = (form: string) => {
      if (!id) throw new GroupUsageError(`svc webhooks ${form}`, usage);
      return id;
    };
    const needDelivery = (form: string) => {
      if (!id || !delivery) throw new GroupUsageError(`svc webhooks ${form} ID DELIVERY`, usage);
      return { params: { path: { webhookID: id, deliveryID: delivery } } };
    };
    /** A secret alone on stdout (to capture), what it is on stderr. */
    const printSecret = (w: WebhookBody & { secret: string }, said: string) => {
      if (json) return ctx.out(JSON.stringify(w));
      ctx.out(w.secret);
      ctx.err(said);
      ctx.err('the secret is shown only now: keep it where the receiver checks signatures');
    };
    switch (command) {
      case 'ls':
        show(ctx, json, await body(api().GET('/account/webhooks')), (a) => webhooksTable(a.webhooks));
        return 0;
      case 'add': {
        const url = need('add URL [--events a,b]');
        const events = listOption(values.events, '--events', usage);
        const made = await body(
          api().POST('/account/webhooks', {
            body: { url, ...(events ? { events } : {}), ...(values.description ? { description: values.description } : {}) },
          }),
        );
        printSecret(made, `webhook ${made.id} sends ${made.events.join(', ') || 'every event'} to ${made.url}`);
        return 0;
      }
      case 'rm': {
        const webhookID = need('rm ID');
        if (!(await confirm(ctx, `delete webhook ${webhookID}? Nothing more is sent to it.`, values.yes === true))) {
          ctx.err('svc: not deleted');
          return 1;
        }
        await api().DELETE('/account/webhooks/{webhookID}', { params: { path: { webhookID } } });
        if (!json) ctx.out(`deleted webhook ${webhookID}`);
        return 0;
      }
      case 'enable': {
        const webhookID = need('enable ID');
        const w = await body(api().POST('/account/webhooks/{webhookID}/enable', { params: { path: { webhookID } } }));
        show(ctx, json, w, () => [`webhook ${w.id} is enabled: events are sent to ${w.url} again`]);
        return 0;
      }
      case 'rotate-secret': {
        const webhookID = need('rotate-secret ID');
        const w = await body(api().POST('/account/webhooks/{webhookID}/secret', { params: { path: { webhookID } } }));
        printSecret(w, `webhook ${w.id} has a new secret; the previous one also signs until ${w.previous_secret_valid_until}`);
        return 0;
      }
      case 'deliveries': {
        const webhookID = need('deliveries ID [--status S] [--limit N]');
        const status =
          values.status === undefined ? undefined : (Object.keys(statusSet) as DeliveryStatus[]).find((s) => s === values.status);
        if (values.status !== undefined && !status)
          throw new GroupUsageError(`--status is one of ${Object.keys(statusSet).join(', ')}`, usage);
        const limit = values.limit === undefined ? undefined : Number(values.limit);
        if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 500))
          throw new GroupUsageError('--limit is a number from 1 to 500', usage);
        const before = values.before === undefined ? undefined : Number(values.before);
        if (before !== undefined && !(Number.isInteger(before) && before >= 0)) throw new GroupUsageError('--before is an event id', usage);
        const query = { ...(status ? { status } : {}), ...(limit ? { limit } : {}), ...(before !== undefined ? { before } : {}) };
        const page = await body(api().GET('/account/webhooks/{webhookID}/deliveries', { params: { path: { webhookID }, query } }));
        show(ctx, json, page, (a) => [
          ...deliveriesTable(a.deliveries),
          ...(a.next_before !== null ? [`older ones: svc webhooks deliveries ${webhookID} --before ${a.next_before}`] : []),
        ]);
        return 0;
      }
      case 'delivery':
        show(
          ctx,
          json,
          await body(api().GET('/account/webhooks/{webhookID}/deliveries/{deliveryID}', needDelivery('delivery'))),
          describeDelivery,
        );
        return 0;
      case 'redeliver': {
        const d = await body(api().POST('/account/webhooks/{webhookID}/deliveries/{deliveryID}/redeliver', needDelivery('redeliver')));
        show(ctx, json, d, () => [`delivery ${d.id} (event ${d.event_id} ${d.event_type}) is ${d.status}: it is sent again now`]);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown webhooks command: ${command}`, usage);
    }
  },
};
