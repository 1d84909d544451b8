// The controllers' manager (controllers/manager.ts) as the kinds' setups make it: every kind's
// controller counted in /metrics in the same order, the sandbox pool's own metrics with Sandboxes
// served, and nothing of a kind whose settings are missing. Nothing here reaches a cluster.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appSettings } from '../../controllers/app/settings.js';
import { buildSettings } from '../../controllers/build/settings.js';
import { databaseSettings } from '../../controllers/database/settings.js';
import { Manager } from '../../controllers/manager.js';
import { sandboxSettings } from '../../controllers/sandbox/settings.js';
import { loadConfig } from '../../lib/config.js';
import { offlineKubeConfig } from '../support/kube.js';
import { createLogger } from '../../lib/logger.js';

const config = loadConfig({ SVC_ARTIFACT_KEY: 'a'.repeat(64) }, { exists: () => false });
const log = createLogger('test', 'silent');

const kindsIn = (text: string, metric: string) => [...text.matchAll(new RegExp(`^${metric}\\{kind="(\\w+)"\\} 0$`, 'gm'))].map((m) => m[1]);

describe('controllers manager', () => {
  it('counts every kind it serves, in order, and the sandbox pool', () => {
    const manager = new Manager(offlineKubeConfig(), appSettings(config), log, {
      databases: databaseSettings(config),
      builds: buildSettings(config),
      sandboxes: sandboxSettings(config),
    });
    const text = manager.metrics();
    assert.match(text, /^svc_controllers_leading 0$/m, 'not leading before start');
    const all = ['App', 'Namespace', 'Database', 'Build', 'Sandbox', 'SandboxPool'];
    for (const metric of [
      'svc_controller_reconciles_total',
      'svc_controller_status_writes_total',
      'svc_controller_status_conflicts_total',
      'svc_controller_queue_waiting',
      'svc_controller_queue_failing',
    ])
      assert.deepEqual(kindsIn(text, metric), all, metric);
    assert.match(text, new RegExp(`^svc_sandbox_pool_size ${config.sandboxes.poolSize}$`, 'm'));
    assert.match(text, /^svc_sandbox_pool_members\{state="ready"\} 0$/m);
    assert.match(text, /^svc_sandbox_launches_total\{launch="cold"\} 0$/m);
    assert.ok(text.endsWith('\n'));
  });

  it('serves only Apps and account namespaces without the other kinds’ settings', () => {
    const text = new Manager(offlineKubeConfig(), appSettings(config), log).metrics();
    assert.deepEqual(kindsIn(text, 'svc_controller_reconciles_total'), ['App', 'Namespace']);
    assert.doesNotMatch(text, /svc_sandbox_/);
  });
});
