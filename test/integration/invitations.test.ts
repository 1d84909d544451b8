// Email invitations are an account's: an App whose namespace is no account's in the platform's
// database (made with kubectl outside the platform, or another installation's on the same cluster)
// gets no mail, however its policy reads. Found when test files ran side by side: each test API
// has its own database, and one mailed an address listed by another file's App.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Invitations, type MailMessage } from '../../lib/auth/invitations.js';
import { createLogger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { uniqueName } from '../support/kube.js';

describe('email invitations', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });

  /** An App rolled out with `emails: [address]` in force, in `namespace`. */
  const app = (namespace: string, address: string): App =>
    ({
      metadata: { name: uniqueName('team'), namespace, uid: uniqueName('uid'), generation: 2 },
      spec: { kind: 'static', auth: { rules: [{ source: 'compose', admit: { emails: [address] } }] } },
      status: { observedGeneration: 2, rollout: { state: 'Live' }, url: 'http://team.apps.localhost', policyEmails: [address] },
    }) as unknown as App;

  it("mails the addresses of an account's App, and none of an App in a namespace that is no account's", async () => {
    const sent: MailMessage[] = [];
    const invitations = new Invitations(
      api.db,
      { enqueue: async (msg) => sent.push(msg) },
      createLogger('invitations', 'silent'),
      () => 'http://team.apps.localhost',
    );
    const stranger = await invitations.sync(app(uniqueName('svc-acct-none'), 'eve@example.test'));
    assert.deepEqual(stranger, { invited: [], removed: [] });
    assert.equal(sent.length, 0, 'nothing queued for an App of no account');
    const own = await invitations.sync(app(api.account.namespace, 'ada@example.test'));
    assert.deepEqual(own.invited, ['ada@example.test']);
    assert.deepEqual(
      sent.map((m) => m.to),
      ['ada@example.test'],
    );
  });
});
