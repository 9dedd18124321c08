import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/platform/config/index.js';
import { leaseRenewMs } from '../../src/core/engine/run-store.js';

const home = mkdtempSync(join(tmpdir(), 'agentsvc-cfg-'));

t.test('defaults', async (t) => {
  const c = loadConfig({ env: { AGENTSVC_HOME: home } });
  t.equal(c.host, '127.0.0.1');
  t.equal(c.port, 8080);
  t.equal(c.runner.kind, 'local');
  t.equal(c.limits.body, 1024 * 1024);
  t.same(c.model.models, [c.model.default]);
  t.equal(c.chat.startsAtOnce, 200, 'run starts at once');
  t.equal(loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_RUN_STARTS_AT_ONCE: '8' } }).chat.startsAtOnce, 8);
  t.equal(c.workspaces, join(home, 'workspaces'), 'workspaces under the home by default');
  t.equal(loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_WORKSPACES: '/srv/shared/ws/' } }).workspaces, '/srv/shared/ws', 'AGENTSVC_WORKSPACES, resolved');
  t.equal(c.nodeStaleSeconds, 30, 'a node is taken for dead after 30 s without a heartbeat');
  t.equal(loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_NODE_STALE_SECONDS: '3' } }).nodeStaleSeconds, 3);
});

t.test('the lease renewal keeps five renewals inside the stale time', async (t) => {
  t.equal(leaseRenewMs(30), 5000, 'the default: every 5 s');
  t.equal(leaseRenewMs(3600), 5000, 'never slower than 5 s');
  t.equal(leaseRenewMs(3), 500);
  t.equal(leaseRenewMs(2), 333);
});

t.test('a wrong setting names itself', async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ AGENTSVC_RUNNER: 'k8s' }, 'AGENTSVC_RUNNER'],
    [{ AGENTSVC_PORT: '70000' }, 'AGENTSVC_PORT'],
    [{ OPENAI_BASE_URL: 'not a url' }, 'OPENAI_BASE_URL'],
    [{ AGENTSVC_SEARCH_BACKEND: 'brave' }, 'AGENTSVC_SEARCH_API_KEY'],
    [{ AGENTSVC_RUN_STARTS_AT_ONCE: '0' }, 'AGENTSVC_RUN_STARTS_AT_ONCE'],
    [{ AGENTSVC_NODE_STALE_SECONDS: '1' }, 'AGENTSVC_NODE_STALE_SECONDS'],
    [{ AGENTSVC_NODE_STALE_SECONDS: '3601' }, 'AGENTSVC_NODE_STALE_SECONDS'],
    [{ AGENTSVC_NODE_STALE_SECONDS: '2.5' }, 'AGENTSVC_NODE_STALE_SECONDS'],
  ];
  for (const [env, setting] of cases) {
    let err: unknown;
    try {
      loadConfig({ env: { AGENTSVC_HOME: home, ...env } });
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError, `${setting}: ConfigError`);
    t.equal((err as ConfigError).setting, setting);
    t.match((err as ConfigError).message, setting);
  }
});

t.test('config file, environment wins, unknown keys refused', async (t) => {
  const file = join(home, 'config.json');
  writeFileSync(file, JSON.stringify({ AGENTSVC_PORT: 9000, AGENTSVC_MODEL: 'm-file', AGENTSVC_MODELS: 'a,b' }));
  const c = loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_MODEL: 'm-env' } });
  t.equal(c.port, 9000);
  t.equal(c.model.default, 'm-env');
  t.same(c.model.models, ['m-env', 'a', 'b']);
  t.equal(c.file, file);
  writeFileSync(file, JSON.stringify({ PORT: 1 }));
  t.throws(() => loadConfig({ env: { AGENTSVC_HOME: home } }), /invalid setting PORT/);
  writeFileSync(file, '{nope');
  t.throws(() => loadConfig({ env: { AGENTSVC_HOME: home } }), /not valid JSON/);
  t.throws(() => loadConfig({ env: { AGENTSVC_HOME: home }, configFile: join(home, 'missing.json') }), /cannot read/);
});
