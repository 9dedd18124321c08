import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';

/** GET /api/env (groups, secrets masked) and the /api/env/check diagnostics (CONTRACT 10). */

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
