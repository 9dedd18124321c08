import t from 'tap';
import { judgeHost, type JudgeInput } from '../../src/features/egress/judge.js';
import type { SourcedRule } from '../../src/features/policy/rules.js';

// How the egress proxy decides a connection (docs/policy-network.md): host rules on the name and
// every address, deny over allow, ask as deny, network_default, and the private-address rule.

const net = (pattern: string | undefined, action: SourcedRule['action'], source: SourcedRule['source'] = 'install', approved?: boolean): SourcedRule => ({
  tool: 'network',
  ...(pattern === undefined ? {} : { pattern }),
  action,
  source,
  ...(approved ? { approved } : {}),
});
const judge = (i: Partial<JudgeInput> & Pick<JudgeInput, 'host' | 'addresses'>) => judgeHost({ rules: [], networkDefault: 'allow', allowPrivate: false, ...i });

t.test('host rules on the name and on every address', async (t) => {
  const rules = [net('evil.example', 'deny'), net('93.184.216.99', 'deny'), net('*.bad.example', 'deny', 'user')];
  t.match(judge({ rules, host: 'good.example', addresses: ['93.184.216.34'] }), { allow: true });
  t.match(judge({ rules, host: 'evil.example', addresses: ['93.184.216.34'] }), {
    allow: false,
    message: 'denied by policy: network evil.example (install)',
    rule: { tool: 'network', pattern: 'evil.example', action: 'deny' },
    source: 'install',
  });
  t.match(judge({ rules, host: 'alias.example', addresses: ['93.184.216.34', '93.184.216.99'] }), {
    allow: false,
    message: 'denied by policy: network 93.184.216.99 (install) (alias.example is 93.184.216.99)',
  }, 'a name that resolves to a denied address is denied');
  t.match(judge({ rules, host: '93.184.216.99', addresses: ['93.184.216.99'] }), { allow: false, message: 'denied by policy: network 93.184.216.99 (install)' }, 'a raw IP is judged as an address');
  t.match(judge({ rules, host: 'x.bad.example', addresses: ['93.184.216.34'] }), { allow: false, source: 'user' });
  t.match(judge({ rules, host: 'bad.example', addresses: ['93.184.216.34'] }), { allow: true }, '*.bad.example does not name bad.example');
  t.match(judge({ rules: [net('Evil.EXAMPLE', 'deny')], host: 'evil.example', addresses: [] }), { allow: false }, 'patterns ignore case');
  t.match(judge({ rules: [net(undefined, 'deny')], host: 'any.example', addresses: ['93.184.216.34'] }), { allow: false }, 'a network deny without pattern denies every host');
  t.match(judge({ rules: [net('evil.example', 'deny')], host: 'evil.example', addresses: [] }), { allow: false }, 'denied even when the name does not resolve');
  t.match(judge({ rules: [net('evil.example', 'ask')], host: 'evil.example', addresses: ['93.184.216.34'] }), { allow: false }, 'ask is deny: nobody answers a socket');
  t.match(judge({ rules: [net('evil.example', 'deny', 'session')], host: 'evil.example', addresses: ['93.184.216.34'] }), { allow: false }, "a session's deny narrows");
});

t.test('WebFetch host rules count; WebFetch rules without a pattern and other tools do not', async (t) => {
  const wf = (pattern: string | undefined, action: SourcedRule['action']): SourcedRule => ({ tool: 'WebFetch', ...(pattern ? { pattern } : {}), action, source: 'install' });
  t.match(judge({ rules: [wf('evil.example', 'deny')], host: 'evil.example', addresses: ['93.184.216.34'] }), { allow: false, rule: { tool: 'WebFetch' } });
  t.match(judge({ rules: [wf(undefined, 'deny')], host: 'evil.example', addresses: ['93.184.216.34'] }), { allow: true }, 'a deny of the WebFetch tool is no host rule');
  t.match(judge({ rules: [{ tool: 'Bash', pattern: 'evil.example', action: 'deny', source: 'install' }], host: 'evil.example', addresses: ['93.184.216.34'] }), { allow: true });
  t.match(judge({ rules: [{ tool: '*', action: 'deny', source: 'install' }], host: 'evil.example', addresses: ['93.184.216.34'] }), { allow: true }, 'a tool glob is no host rule');
});

t.test('network_default: deny lets only allowed hosts through', async (t) => {
  const networkDefault = 'deny' as const;
  const rules = [net('pypi.org', 'allow'), net('151.101.0.223', 'allow')];
  t.match(judge({ networkDefault, rules, host: 'pypi.org', addresses: ['151.101.0.224'] }), { allow: true });
  t.match(judge({ networkDefault, rules, host: 'files.example', addresses: ['151.101.0.223'] }), { allow: true }, 'an allowed address');
  t.match(judge({ networkDefault, rules, host: 'other.example', addresses: ['93.184.216.34'] }), {
    allow: false,
    message: 'denied by policy: no network rule allows other.example (network_default: deny)',
    rule: { tool: 'network', action: 'deny' },
    source: 'install',
  });
  t.match(judge({ networkDefault, rules: [net('x.example', 'allow', 'session')], host: 'x.example', addresses: ['93.184.216.34'] }), { allow: false }, "a session's own allow does not widen");
  t.match(judge({ networkDefault, rules: [net('x.example', 'allow', 'session', true)], host: 'x.example', addresses: ['93.184.216.34'] }), { allow: true }, 'a person\'s "Allow for this session" does');
  t.match(judge({ networkDefault, rules: [...rules, net('pypi.org', 'deny', 'user')], host: 'pypi.org', addresses: ['151.101.0.224'] }), { allow: false }, 'deny wins over allow');
});

t.test('private, loopback and link-local addresses', async (t) => {
  for (const [host, addresses] of [
    ['intranet.example', ['10.0.0.5']],
    ['mixed.example', ['93.184.216.34', '192.168.1.1']],
    ['169.254.169.254', ['169.254.169.254']],
    ['localhost', ['127.0.0.1', '::1']],
    ['v6.example', ['fe80::1']],
    ['mapped.example', ['::ffff:127.0.0.1']],
  ] as const) {
    t.match(judge({ host, addresses: [...addresses] }), { allow: false, message: /^refused: .* is not a public internet address$/, rule: null }, `${host} refused`);
    t.match(judge({ host, addresses: [...addresses], allowPrivate: true }), { allow: true }, `${host} with AGENTSVC_WEBFETCH_ALLOW_PRIVATE`);
  }
  t.match(judge({ host: 'intranet.example', addresses: ['10.0.0.5'] }), { message: 'refused: intranet.example resolves to 10.0.0.5, which is not a public internet address' });
  t.match(judge({ rules: [net('intranet.example', 'allow')], host: 'intranet.example', addresses: ['10.0.0.5'] }), { allow: true }, 'a network allow rule naming the host');
  t.match(judge({ rules: [net('10.0.0.*', 'allow')], host: 'intranet.example', addresses: ['10.0.0.5'] }), { allow: true }, 'or the address');
  t.match(judge({ rules: [net('*', 'allow')], host: 'intranet.example', addresses: ['10.0.0.5'] }), { allow: false }, 'a bare * names nothing');
  t.match(judge({ rules: [net(undefined, 'allow')], host: 'intranet.example', addresses: ['10.0.0.5'] }), { allow: false }, 'nor does a rule without pattern');
  t.match(judge({ rules: [{ tool: 'WebFetch', pattern: 'intranet.example', action: 'allow', source: 'install' }], host: 'intranet.example', addresses: ['10.0.0.5'] }), { allow: false }, 'only network rules lift it');
  t.match(judge({ rules: [net('intranet.example', 'allow'), net('10.0.0.5', 'deny')], host: 'intranet.example', addresses: ['10.0.0.5'] }), { allow: false, rule: { pattern: '10.0.0.5' } });
});
