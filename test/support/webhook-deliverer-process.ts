// A webhook deliverer in a process of its own, for the test that kills one mid-attempt
// (test/integration/webhook-delivery.test.ts): argv[2] is the database URL; loopback receivers allowed.
import { connect } from '../../lib/db/connection.js';
import { createLogger } from '../../lib/logger.js';
import { WebhookDeliverer } from '../../lib/webhooks/deliverer.js';
import { webhookDispatcher } from '../../lib/webhooks/guarded-dispatcher.js';

const db = connect(process.argv[2]!);
const deliverer = new WebhookDeliverer({
  db,
  log: createLogger('webhooks', 'info'),
  dispatcher: webhookDispatcher({ isAllowed: () => true }),
  pollMs: 100,
});
deliverer.start();
process.stdout.write('ready\n');
