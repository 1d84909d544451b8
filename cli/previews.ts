// `svc previews ls|create|deploy|rm`: an app's previews, deploys of a ref (a branch, a pull
// request) served beside it at their own URL (GET/POST /apps/{appID}/previews, DELETE
// /apps/{appID}/previews/{ref}, POST /apps/{appID}/previews/{ref}/deploy). A preview is an app
// named APP--REF, so `svc deploy APP--REF DIR` deploys a directory to it.
import { body, type paths } from '../lib/client/index.js';
import { confirm, connect, GroupUsageError, parseGroupArgs, printUsage, show, type CommandGroup } from './command.js';
import { describeDeploy } from './deploys.js';
import { shellWord } from './domains.js';
import { table } from './table.js';

type PreviewBody = paths['/apps/{appID}/previews']['get']['responses'][200]['content']['application/json']['previews'][number];

const usage = `usage:
  svc previews ls APP [--json]                 the app's previews: ref, status, URL
  svc previews create APP REF [--image IMG] [--json]
                                               a preview of REF (a DNS label: feature-x, pr-42), serving
                                               IMG, else what the app serves now
  svc previews deploy APP REF --image IMG [--json]
                                               deploy an image to a preview (a directory:
                                               svc deploy APP--REF DIR)
  svc previews rm APP REF [--yes]              delete a preview and its database copy (asks first)
example:
  svc previews create shop pr-42 --image registry.example/shop:pr-42 && svc previews ls shop`;

/** `svc previews ls`: one line per preview. */
export function previewsTable(app: string, previews: PreviewBody[]): string[] {
  if (previews.length === 0) return [`app ${app} has no previews; make one: svc previews create ${shellWord(app)} REF`];
  return table([
    ['REF', 'APP', 'STATUS', 'URL', 'DEPLOY', 'DATABASE'],
    ...previews.map((p) => [p.ref, p.app, p.status, p.url ?? '-', p.current_deploy ?? '-', p.database ?? '-']),
  ]);
}

export const previewsGroup: CommandGroup = {
  name: 'previews',
  synopsis: `  svc previews ls APP | create APP REF [--image IMG] | deploy APP REF --image IMG | rm APP REF
                                              an app's previews: deploys of a ref at their own URL`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      json: { type: 'boolean' },
      image: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
    });
    const [command, app, ref] = positionals;
    if (values.help) return printUsage(this, ctx);
    if (!command) throw new GroupUsageError('', usage);
    const json = values.json === true;
    const api = () => connect(ctx, values.token);
    const needRef = (form: string) => {
      if (!app || !ref) throw new GroupUsageError(`svc previews ${form}`, usage);
      return { app, ref };
    };
    switch (command) {
      case 'ls': {
        if (!app) throw new GroupUsageError('svc previews ls APP', usage);
        const answer = await body(api().GET('/apps/{appID}/previews', { params: { path: { appID: app } } }));
        show(ctx, json, answer, (a) => previewsTable(app, a.previews));
        return 0;
      }
      case 'create': {
        const p = needRef('create APP REF [--image IMG]');
        const created = await body(
          api().POST('/apps/{appID}/previews', {
            params: { path: { appID: p.app } },
            body: { ref: p.ref, ...(values.image ? { image: values.image } : {}) },
          }),
        );
        show(ctx, json, created, (c) => [
          `preview ${c.preview.ref} of ${p.app} is app ${c.preview.app}${c.preview.url ? ` at ${c.preview.url}` : ''}`,
          ...(c.deploy ? describeDeploy(c.deploy) : [`nothing deployed yet: svc deploy ${shellWord(c.preview.app)} DIR`]),
        ]);
        return 0;
      }
      case 'deploy': {
        const p = needRef('deploy APP REF --image IMG');
        if (!values.image)
          throw new GroupUsageError(`--image names what to deploy (a directory: svc deploy ${p.app}--${p.ref} DIR)`, usage);
        const deploy = await body(
          api().POST('/apps/{appID}/previews/{ref}/deploy', {
            params: { path: { appID: p.app, ref: p.ref } },
            body: { image: values.image },
          }),
        );
        show(ctx, json, deploy, (d) => [...describeDeploy(d), `follow it: svc deploys get ${shellWord(d.id)}`]);
        return 0;
      }
      case 'rm': {
        const p = needRef('rm APP REF [--yes]');
        if (!(await confirm(ctx, `delete preview ${p.ref} of ${p.app}, and its database copy if it has one?`, values.yes === true))) {
          ctx.err('svc: not deleted');
          return 1;
        }
        await api().DELETE('/apps/{appID}/previews/{ref}', { params: { path: { appID: p.app, ref: p.ref } } });
        if (!json) ctx.out(`deleted preview ${p.ref} of ${p.app}`);
        return 0;
      }
      default:
        throw new GroupUsageError(`unknown previews command: ${command}`, usage);
    }
  },
};
