import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../lib/config.js';

const none = { exists: () => false };

describe('loadConfig', () => {
  it('fills defaults and freezes the result', () => {
    const config = loadConfig({}, none);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.stateDir, path.resolve('.svc'));
    assert.equal(config.databaseUrl, 'postgres://svc@127.0.0.1:55432/svc');
    assert.equal(config.kubeconfig, undefined);
    assert.ok(Object.isFrozen(config));
  });

  it('uses the local platform kubeconfig when it exists and KUBECONFIG is unset', () => {
    const config = loadConfig({ SVC_STATE_DIR: '/tmp/state' }, { exists: (f) => f === '/tmp/state/kubeconfig' });
    assert.equal(config.kubeconfig, '/tmp/state/kubeconfig');
    assert.equal(loadConfig({ KUBECONFIG: '/k' }, { exists: () => true }).kubeconfig, '/k');
  });

  it('names every invalid variable and the value it got', () => {
    assert.throws(
      () => loadConfig({ SVC_LOG_LEVEL: 'loud', SVC_DATABASE_URL: 'mysql://x' }, none),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.problems.length, 2);
        assert.match(err.message, /SVC_LOG_LEVEL: .*\(got "loud"\)/);
        assert.match(err.message, /SVC_DATABASE_URL: must be a postgres:\/\/ URL \(got "mysql:\/\/x"\)/);
        return true;
      },
    );
  });
});
