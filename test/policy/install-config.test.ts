import t from 'tap';
import { ConfigError, loadConfig } from '../../src/platform/config/index.js';

// docs/operations.md and docs/policy.md: a wrong install policy stops `up` with one line naming the setting and the rule.
const load = (env: Record<string, string>) => loadConfig({ env: { AGENTSVC_HOME: '/nonexistent-agentsvc-home', ...env } });

t.test('the install policy from AGENTSVC_POLICY', async (t) => {
  t.same(load({}).policy, { default: 'allow', rules: [], unattended: 'deny', network_default: 'allow' }, 'none: everything allowed as before');
  t.same(load({ AGENTSVC_POLICY: '{"default":"ask","rules":[{"tool":" Bash ","pattern":"git push*","action":"deny"}]}' }).policy, {
    default: 'ask',
    rules: [{ tool: 'Bash', pattern: 'git push*', action: 'deny' }],
    unattended: 'deny',
    network_default: 'allow',
  });
  const bad: [string, RegExp][] = [
    ['{"rules":[{"tool":"Bash","action":"allow"},{"tool":"Bash","action":"maybe"}]}', /AGENTSVC_POLICY: rules\.1\.action/],
    ['{"rules":[{"action":"deny"}]}', /rules\.0\.tool/],
    ['{"rules":[{"tool":"Bash","action":"deny","patern":"x"}]}', /rules\.0/],
    ['{"unattended":"ask"}', /unattended/],
    ['{"default":"sometimes"}', /default/],
    ['{"network_default":"ask"}', /network_default/],
    ['{"rule":[]}', /\(policy\)|rule/],
    ['not json', /not valid JSON/],
  ];
  for (const [value, message] of bad) {
    const e = t.throws(() => load({ AGENTSVC_POLICY: value })) as unknown;
    t.ok(e instanceof ConfigError, value);
    t.match((e as Error).message, message, value);
    t.notMatch((e as Error).message, /\n/, 'one line');
  }
});
