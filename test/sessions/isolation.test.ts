import { existsSync, mkdirSync } from 'node:fs';
import t from 'tap';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { build } from '../helpers/app.js';

t.test("another user's session is NOT_FOUND on every route, and stays as it was", async (t) => {
  const app = await build(t);
  const alice = await app.newUser();
  const bob = await app.newUser();
  const res = await app.api('/api/sessions', {
    method: 'POST',
    key: alice.key,
    json: { intent: "alice's", env: { A: '1' }, template_id: 'tpl/x' },
  });
  const { session_id: id } = await res.json();
  await app.api(`/api/sessions/${id}/upset_extra_info`, { method: 'POST', key: alice.key, json: { extra: { task_id: 'secret-task' } } });
  const dir = sessionHostDir(app.home, alice.userId, id);
  mkdirSync(dir, { recursive: true });
  const before = await (await app.api(`/api/sessions/${id}`, { key: alice.key })).json();

  const routes: [string, string, unknown][] = [
    ['GET', '', undefined],
    ['PATCH', '', { intent: 'stolen' }],
    ['DELETE', '', undefined],
    ['PUT', '/env', { env: { B: '2' } }],
    ['PATCH', '/pin', { pinned: true }],
    ['PATCH', '/sharing', { shared: true }],
    ['PATCH', '/memory', { memory_enabled: true }],
    ['POST', '/upset_extra_info', { extra: { hacked: true } }],
    ['GET', '/extra_info', undefined],
  ];
  for (const [method, path, json] of routes) {
    const r = await app.api(`/api/sessions/${id}${path}`, { method, json, key: bob.key });
    t.equal(r.status, 404, `${method} ${path || '/'}`);
    t.same(await r.json(), { detail: 'session not found', code: 'NOT_FOUND' });
  }
  const list = await (await app.api('/api/sessions?q=alice', { key: bob.key })).json();
  t.equal(list.total, 0, 'not listed to bob');
  t.equal((await app.api('/api/sessions/extra_info/by_task/secret-task', { key: bob.key })).status, 404, 'not found by task for bob');

  const after = await (await app.api(`/api/sessions/${id}`, { key: alice.key })).json();
  t.same(after, before, "alice's session is unchanged");
  t.same((await (await app.api(`/api/sessions/${id}/extra_info`, { key: alice.key })).json()).extra, { task_id: 'secret-task' });
  t.ok(existsSync(dir), 'and so is its folder');
  t.equal((await (await app.api('/api/sessions/extra_info/by_task/secret-task', { key: alice.key })).json()).session_id, id);
});
