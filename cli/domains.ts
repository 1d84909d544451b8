// `svc domains ls|add|verify|rm`: an app's custom domains (docs/api/domains.md). add and verify print
// the domain's status, the DNS records to publish exactly as they must be published, and what to do
// next; --json prints the API's answer as it came.
import { body } from '../lib/client/index.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { describeDomain, domainsTable, type DomainBody } from './domain-view.js';
import { accountDomainsTable, registrarUsage, runRegistrar } from './registrar.js';

export { describeDomain, domainPath, domainsTable, shellWord, type DomainBody, type DomainRecordBody } from './domain-view.js';

const usage = `usage:
  svc domains ls APP [--json]                  the app's custom domains: status, HTTPS, and why one
                                               does not route (without APP: the account's, below)
  svc domains add APP NAME [--json]            add NAME (shop.example.com, or '*.shop.example.com'
                                               quoted) and print the DNS records to publish (written
                                               for you when the name was bought here)
  svc domains verify APP NAME [--json]         check the records now, and say what is wrong
  svc domains rm APP NAME                      stop routing NAME to the app, and free it
the account's domains, bought through the platform's registrar:
${registrarUsage}
example:
  svc domains add shop shop.example.com && svc domains verify shop shop.example.com
  svc domains search --word adalovelace && svc domains register adalovelace.dev --contact ada.json`;

export const domainsGroup: CommandGroup = {
  name: 'domains',
  synopsis: `  svc domains ls APP [--json] | add APP NAME [--json] | verify APP NAME [--json] | rm APP NAME
                                              an app's custom domains (NAME: shop.example.com, or
                                              '*.shop.example.com' quoted); add prints the DNS records
                                              to publish, verify checks them now and says what is wrong
  svc domains search | register | ls | renew | autorenew ...
                                              the account's domains, bought through the registrar`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      yes: { type: 'boolean', short: 'y' },
      word: { type: 'string' },
      contact: { type: 'string' },
      years: { type: 'string' },
      'no-auto-renew': { type: 'boolean' },
      app: { type: 'string' },
    });
    const [command, app, name] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const needBoth = () => {
      if (!app || !name) throw new GroupUsageError(`svc domains ${command} APP NAME`, usage);
      return { app, name };
    };
    const api = () => connect(ctx, values.token);
    const print = (answer: { domain: DomainBody }) => show(ctx, json, answer, (a) => describeDomain(a.domain));
    const registrar = await runRegistrar(
      ctx,
      api,
      command,
      positionals.slice(1),
      {
        json,
        yes: values.yes === true,
        word: values.word,
        contact: values.contact,
        years: values.years,
        autoRenew: values['no-auto-renew'] !== true,
        app: values.app,
      },
      (answer, lines) => show(ctx, json, answer, () => lines),
    );
    if (registrar !== undefined) return registrar;
    switch (command) {
      case 'ls': {
        if (!app) {
          show(ctx, json, await body(api().GET('/domains')), accountDomainsTable);
          return 0;
        }
        show(ctx, json, await body(api().GET('/apps/{appID}/domains', { params: { path: { appID: app } } })), (a) =>
          domainsTable(app, a.domains),
        );
        return 0;
      }
      case 'add': {
        const a = needBoth();
        const added = await body(api().POST('/apps/{appID}/domains', { params: { path: { appID: a.app } }, body: { name: a.name } }));
        show(ctx, json, added, () => describeDomain(added.domain, added));
        return 0;
      }
      case 'verify': {
        const a = needBoth();
        print(await body(api().POST('/apps/{appID}/domains/{domain}/verify', { params: { path: { appID: a.app, domain: a.name } } })));
        return 0;
      }
      case 'rm': {
        const a = needBoth();
        await api().DELETE('/apps/{appID}/domains/{domain}', { params: { path: { appID: a.app, domain: a.name } } });
        // The API answers 204, no body: --json prints nothing.
        if (!json) ctx.out(`${a.name} removed from ${a.app}: it no longer routes there, and the name is free`);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown domains command: ${command}`, usage);
    }
  },
};
