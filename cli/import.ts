// `svc import REPO [--ref R] [--name N] [--path P] [--preview]`: creates an app from a Git repository
// and streams its first build (POST /apps/imports), or says what it would do, creating nothing
// (GET /apps/imports/preview; docs/api/imports.md).
import { body } from '../lib/client/index.js';
import { followBuild } from './builds.js';
import { connect, GroupUsageError, parseGroupArgs, printUsage, type CommandGroup } from './command.js';

const usage = `usage:
  svc import REPO [--ref REF] [--name NAME] [--path DIR] [--json]
                                               create an app from a Git repository (an https URL)
                                               and stream its first build; exits 0 when it succeeded
  svc import REPO --preview [--ref REF] [--path DIR] [--json]
                                               what it would build, creating nothing
  --ref REF     a branch or tag (default: the repository's default branch)
  --name NAME   the app's name (default: the repository's)
  --path DIR    the sub-directory of the repository that is the app
example:
  svc import https://github.com/example/shop --name shop`;

export const importGroup: CommandGroup = {
  name: 'import',
  synopsis: `  svc import REPO [--ref REF] [--name NAME] [--path DIR] [--preview] [--json]
                                              create an app from a Git repository and build it
                                              (--preview: what it would do, creating nothing)`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {
      ref: { type: 'string' },
      name: { type: 'string' },
      path: { type: 'string' },
      preview: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (values.help) return printUsage(this, ctx);
    const [repository, extra] = positionals;
    if (!repository) throw new GroupUsageError('name the repository to import (an https URL)', usage);
    if (extra !== undefined) throw new GroupUsageError(`one repository at a time (got ${repository} and ${extra})`, usage);
    const api = connect(ctx, values.token);
    const where = { ...(values.ref ? { ref: values.ref } : {}), ...(values.path ? { path: values.path } : {}) };
    if (values.preview) {
      const p = await body(api.GET('/apps/imports/preview', { params: { query: { repository, ...where } } }));
      if (values.json) ctx.out(JSON.stringify(p));
      else {
        // The plan's fields are the builder's (docs/api/builds.md#the-plan): the document leaves them open.
        const plan = p.plan as { kind?: unknown; why?: unknown } | null;
        ctx.out(
          `${repository} at ${p.ref} (${p.commit.slice(0, 12)}): ${plan ? `${String(plan.kind)}, ${String(plan.why)}` : `nothing to build: ${p.problem}`}${p.services.length ? `; services ${p.services.map((s) => s.name).join(', ')}` : ''}; auth: ${p.auth_from}`,
        );
      }
      return p.plan ? 0 : 1;
    }
    const made = await body(api.POST('/apps/imports', { body: { repository, ...where, ...(values.name ? { name: values.name } : {}) } }));
    if (values.json) {
      ctx.out(JSON.stringify(made));
      return 0;
    }
    ctx.out(`App ${made.app.name} imported from ${repository} (default branch ${made.repository.default_branch})`);
    ctx.out(
      `Push webhook: POST <API address>${made.repository.hook_path}, secret ${made.repository.hook_secret} (shown once; the repository is also polled every minute)`,
    );
    const ended = await followBuild(api, made.build.id, (text) => ctx.write(text));
    ctx.out(`Build ${ended.id} ${ended.status}${ended.message ? `: ${ended.message}` : ''}`);
    return ended.status === 'succeeded' ? 0 : 1;
  },
};
