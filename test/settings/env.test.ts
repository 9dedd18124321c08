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

t.test('diagnostics: an SSE stream of checks then end; one check by id; unknown 404', async (t) => {
  const { app } = await buildWithModel(t);
  const res = await app.api('/api/env/check');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/event-stream/);
  const body = await res.text();
  const events = body
    .trim()
    .split('\n\n')
    .map((b) => ({ event: /^event: (.*)$/m.exec(b)?.[1], data: JSON.parse(/^data: (.*)$/m.exec(b)![1]) }));
  t.same(events.map((e) => e.event), ['check', 'check', 'check', 'check', 'check', 'check', 'end']);
  const byId = Object.fromEntries(events.filter((e) => e.event === 'check').map((e) => [e.data.check_id, e.data]));
  t.same(Object.keys(byId), ['database', 'redis', 'runner', 'model', 'search', 'disk']);
  t.match(byId.database, { status: 'ok' });
  t.match(byId.redis, { status: 'ok', detail: /not configured/ });
  t.match(byId.search, { status: 'warn', detail: /no search backend/ });
  t.match(byId.disk, { status: /ok|warn/, detail: /GiB free/ });
  t.match(byId.model.status, /ok|warn/, `the fake model endpoint: ${byId.model.detail}`);
  t.match(await (await app.api('/api/env/check/database', { method: 'POST' })).json(), { check_id: 'database', status: 'ok' });
  t.equal((await app.api('/api/env/check/nope', { method: 'POST' })).status, 404);
});

t.test('diagnostics report a model endpoint that is down as a failure', async (t) => {
  const { app, model } = await buildWithModel(t);
  await model.close();
  const one = await (await app.api('/api/env/check/model', { method: 'POST' })).json();
  t.match(one, { check_id: 'model', status: 'fail', detail: /unreachable/ });
});
