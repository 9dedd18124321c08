import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { maskSetting } from '../../src/features/user-settings/credentials.js';

/** GET /api/env (groups, secrets masked) and the /api/env/check diagnostics (docs/memories-and-settings.md). */

t.test('environment groups: every setting once, secrets masked', async (t) => {
  const { app } = await buildWithModel(t, { OPENAI_API_KEY: 'sk-very-secret', AGENTSVC_SEARCH_BACKEND: 'brave', AGENTSVC_SEARCH_API_KEY: 'brave-secret' });
  const res = await app.api('/api/env');
  t.equal(res.status, 200);
  const groups = (await res.json()) as { group: string; items: { env_var: string; value: string; default: string; remark: string }[] }[];
  const all = groups.flatMap((g) => g.items);
  t.equal(new Set(all.map((i) => i.env_var)).size, all.length, 'each setting once');
  t.ok(all.length >= 40, `${all.length} settings`);
  t.same(groups.map((g) => g.group).sort(), ['database', 'limits', 'memory', 'model', 'plugins', 'redis', 'runner', 'server', 'sharing'].sort());
  const item = (name: string) => all.find((i) => i.env_var === name)!;
  t.equal(item('OPENAI_API_KEY').value, '****', 'the model key is masked');
  t.equal(item('AGENTSVC_SEARCH_API_KEY').value, '****');
  t.match(item('DATABASE_URL').value, /^postgres(ql)?:\/\/[^:]*:\*\*\*\*@/, 'the database password is masked');
  t.notOk(JSON.stringify(groups).includes('sk-very-secret'));
  t.match(item('AGENTSVC_PORT'), { value: '0', default: '8080' });
  t.equal(groups.find((g) => g.group === 'model')!.items.some((i) => i.env_var === 'AGENTSVC_MODEL'), true);
  t.equal((await app.api('/api/env', { key: null })).status, 401);
});

t.test('GET /api/env masks every credential form in a value', async (t) => {
  const { app } = await buildWithModel(t, {
    AGENTSVC_SEARCH_URL: 'https://reader:pw1secret@search.example/q?format=json&password=pw2secret&api_key=pw3secret&token=pw4secret',
    DOCKER_HOST: 'tcp://pw5secret@docker.internal:2376',
  });
  const all = ((await (await app.api('/api/env')).json()) as { items: { env_var: string; value: string }[] }[]).flatMap((g) => g.items);
  const value = (name: string) => all.find((i) => i.env_var === name)!.value;
  t.equal(value('AGENTSVC_SEARCH_URL'), 'https://reader:****@search.example/q?format=json&password=****&api_key=****&token=****', 'userinfo password and each credential parameter');
  t.equal(value('DOCKER_HOST'), 'tcp://****@docker.internal:2376', 'a token as the user name');
  t.notOk(JSON.stringify(all).includes('secret'), 'no credential anywhere in the answer');
});

t.test('maskSetting: credential names and forms', async (t) => {
  const cases: [string, string, string][] = [
    ['OPENAI_API_KEY', 'sk-1', '****'],
    ['AGENTSVC_METRICS_TOKEN', 'x'.repeat(16), '****'],
    ['SOME_PASSWD', 'p', '****'],
    ['CLIENT_SECRET_FILE', '/run/s', '****'],
    ['AGENTSVC_SKILLS_PROMPT_TOKENS', '2000', '2000'],
    ['AGENTSVC_HOME', '/var/lib/agentsvc', '/var/lib/agentsvc'],
    ['X', 'https://h/p?q=1&password=hunter2&x=y', 'https://h/p?q=1&password=****&x=y'],
    ['X', 'https://h/p?access_token=abc#frag', 'https://h/p?access_token=****#frag'],
    ['X', 'postgres://u:p/a@ss@h:5/db', 'postgres://u:****@h:5/db'],
    ['X', 'https://ghp_abc@github.com/x', 'https://****@github.com/x'],
    ['X', 'token=abc,api_key=def other', 'token=****,api_key=**** other'],
    ['X', 'secret="a b" rest', 'secret=**** rest'],
    ['X', '{"api_key": "zz\\"z", "n": 1}', '{"api_key": "****", "n": 1}'],
    ['X', 'Authorization: Bearer abc.def', 'Authorization: ****'],
    ['X', 'password: two words', 'password: ****'],
    ['X', 'tcp://docker.internal:2376', 'tcp://docker.internal:2376'],
    ['X', '', ''],
  ];
  for (const [name, value, want] of cases) t.equal(maskSetting(name, value), want, `${name}=${value}`);
});

t.test('diagnostics add what only the service can reach: redis, the model endpoint, the search backend', async (t) => {
  const { app, model } = await buildWithModel(t);
  const one = async (id: string) => (await app.api(`/api/env/check/${id}`, { method: 'POST' })).json();
  t.match(await one('redis'), { check_id: 'redis', status: 'ok', detail: /not configured/ });
  t.match(await one('search'), { check_id: 'search', status: 'warn', detail: /no search backend/ });
  t.match((await one('model')).status, /ok|warn/, 'the fake model endpoint answers');
  await model.close();
  t.match(await one('model'), { check_id: 'model', status: 'fail', detail: /unreachable/ });
  t.equal((await app.api('/api/env/check/nope', { method: 'POST' })).status, 404);
});
