import t from 'tap';
import { build, type TestApp } from '../helpers/app.js';

async function create(app: TestApp, json: unknown = {}, key?: string): Promise<string> {
  const res = await app.api('/api/sessions', { method: 'POST', json, key });
  if (res.status !== 200) throw new Error(`create: ${res.status} ${await res.text()}`);
  return (await res.json()).session_id;
}

const detail = async (app: TestApp, id: string) => (await app.api(`/api/sessions/${id}`)).json();

t.test('sessions: create, read, change', async (t) => {
  const app = await build(t, { AGENTSVC_MODEL: 'alpha', AGENTSVC_MODELS: 'alpha,beta' });

  t.test('create with no body fields: defaults', async (t) => {
    const res = await app.api('/api/sessions', { method: 'POST', json: {} });
    t.equal(res.status, 200);
    const body = await res.json();
    t.same(Object.keys(body), ['session_id']);
    t.match(body.session_id, /^sess_[0-9A-Za-z]{20}$/);
    const s = await detail(app, body.session_id);
    t.match(s, {
      id: body.session_id,
      intent: '',
      status: 'created',
      model: 'alpha',
      shared: false,
      is_pinned: false,
      memory_enabled: true, // the config default, AGENTSVC_MEMORY_ENABLED (true)
      is_persistent: false,
      replay_state: null,
      mode: 'executing',
      template_id: null,
      solution_id: null,
      biz_role_id: null,
      solution: {},
      session_setup: {},
      primary_skill_snapshot: null,
      viewer_role: 'owner',
      disable_tools: [],
    });
    t.notOk('env' in s, 'no env until one is set');
    const me = await (await app.api('/api/auth/me')).json();
    t.equal(s.user_id, me.id);
    t.equal(new Date(s.created_at).toISOString(), s.created_at, 'ISO timestamps');
    t.equal(s.updated_at, s.created_at);
  });

  t.test('create with every field', async (t) => {
    const ws = await (await app.api('/api/prod_workspaces', { method: 'POST', json: { name: 'Team' } })).json();
    const every = {
      intent: 'Build a thing',
      solution_id: 'code-reviewer',
      biz_role_id: 'fixer',
      template_id: 'tpl/web/1',
      primary_skill_id: 'skill_1',
      model: 'beta',
      software_factory_id: 7,
      memory_enabled: true,
      is_persistent: true,
      env: { FOO: 'bar', _X1: '' },
      workspace_id: ws.id,
      disable_tools: ['Bash', 'webfetch'],
      mode: 'planning',
    };
    const s = await detail(app, await create(app, every));
    const { env, disable_tools, ...scalars } = every;
    t.match(s, scalars);
    t.same(s.env, env);
    t.same(s.disable_tools, disable_tools);
    const nulls = await detail(app, await create(app, { solution_id: null, model: null, env: null, memory_enabled: null }));
    t.equal(nulls.model, 'alpha', 'null model means the default');
    t.notOk('env' in nulls);
  });

  t.test('bad create bodies: 422 naming the field, nothing stored', async (t) => {
    const before = (await (await app.api('/api/sessions')).json()).total;
    const bad: [unknown, string][] = [
      [{ model: 'gamma' }, 'model'],
      [{ intent: 5 }, 'intent'],
      [{ intent: 'x'.repeat(10001) }, 'intent'],
      [{ intent: 'nul\u0000byte' }, 'intent'],
      [{ unknown_field: 1 }, 'unknown_field'],
      [{ software_factory_id: 1.5 }, 'software_factory_id'],
      [{ software_factory_id: 2 ** 40 }, 'software_factory_id'],
      [{ is_persistent: 'yes' }, 'is_persistent'],
      [{ env: { 'BAD-KEY': 'x' } }, 'env'],
      [{ env: { A: 1 } }, 'env'],
      [{ env: { A: 'x\ud800' } }, 'env'],
      [{ disable_tools: 'Bash' }, 'disable_tools'],
      [{ mode: 'dreaming' }, 'mode'],
    ];
    for (const [json, field] of bad) {
      const res = await app.api('/api/sessions', { method: 'POST', json });
      t.equal(res.status, 422, JSON.stringify(json).slice(0, 80));
      const body = await res.json();
      t.equal(body.code, 'VALIDATION_ERROR');
      t.ok(JSON.stringify(body.detail).includes(field), `detail names ${field}`);
    }
    t.equal((await app.api('/api/sessions', { method: 'POST', json: ['x'] })).status, 422);
    t.equal((await app.api('/api/sessions', { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } })).status, 400);
    const huge = await app.api('/api/sessions', { method: 'POST', json: { intent: 'x'.repeat(2 * 1024 * 1024) } });
    t.equal(huge.status, 413);
    t.equal((await app.api('/api/sessions')).status, 200);
    t.equal((await (await app.api('/api/sessions')).json()).total, before, 'nothing stored');
  });

  t.test('PATCH intent', async (t) => {
    const id = await create(app, { intent: 'old' });
    const res = await app.api(`/api/sessions/${id}`, { method: 'PATCH', json: { intent: 'new title' } });
    t.equal(res.status, 200);
    const s = await res.json();
    t.equal(s.intent, 'new title');
    t.equal(s.viewer_role, 'owner');
    t.ok(s.updated_at >= s.created_at);
    t.equal((await detail(app, id)).intent, 'new title');
    const same = await (await app.api(`/api/sessions/${id}`, { method: 'PATCH', json: {} })).json();
    t.equal(same.intent, 'new title', 'empty patch changes nothing');
    for (const json of [{ intent: 'x'.repeat(10001) }, { intent: 3 }, { status: 'completed' }, { intent: 'ok', extra: 1 }]) {
      const bad = await app.api(`/api/sessions/${id}`, { method: 'PATCH', json });
      t.equal(bad.status, 422);
      t.equal((await bad.json()).code, 'VALIDATION_ERROR');
    }
    const after = await detail(app, id);
    t.equal(after.intent, 'new title');
    t.equal(after.status, 'created');
  });

  t.test('PUT env replaces the map', async (t) => {
    const id = await create(app, { env: { OLD: '1' } });
    const res = await app.api(`/api/sessions/${id}/env`, { method: 'PUT', json: { env: { API_URL: 'http://x', TOKEN: 's3cret' } } });
    t.equal(res.status, 200);
    const s = await res.json();
    t.same(s.env, { API_URL: 'http://x', TOKEN: 's3cret' });
    t.equal(s.id, id);
    t.same((await detail(app, id)).env, { API_URL: 'http://x', TOKEN: 's3cret' });
    const empty = await (await app.api(`/api/sessions/${id}/env`, { method: 'PUT', json: { env: {} } })).json();
    t.same(empty.env, {}, 'an empty map is set, and shown');

    const tooMany = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`K${i}`, 'v']));
    const max = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`K${i}`, 'v']));
    t.equal((await app.api(`/api/sessions/${id}/env`, { method: 'PUT', json: { env: max } })).status, 200, '200 entries allowed');
    for (const json of [{ env: tooMany }, { env: { '1ABC': 'x' } }, { env: { A: null } }, { env: ['A'] }, {}, { env: {}, more: 1 }, { env: { A: 'nul\u0000' } }, { env: { LD_PRELOAD: '/w/evil.so' } }, { env: { BASH_ENV: 'x' } }, { env: { AGENTSVC_HOME: '/' } }]) {
      const bad = await app.api(`/api/sessions/${id}/env`, { method: 'PUT', json });
      t.equal(bad.status, 422, JSON.stringify(json).slice(0, 60));
      t.equal((await bad.json()).code, 'VALIDATION_ERROR');
    }
    t.same(Object.keys((await detail(app, id)).env).length, 200, 'failed PUTs changed nothing');
  });

  t.test('pin, sharing, memory', async (t) => {
    const id = await create(app);
    const pin = await app.api(`/api/sessions/${id}/pin`, { method: 'PATCH', json: { pinned: true } });
    t.equal(pin.status, 200);
    const pinned = await pin.json();
    t.equal(pinned.is_pinned, true);
    t.equal(pinned.viewer_role, 'owner', 'pin returns the detail');
    t.same(await (await app.api(`/api/sessions/${id}/sharing`, { method: 'PATCH', json: { shared: true } })).json(), { shared: true });
    t.same(await (await app.api(`/api/sessions/${id}/memory`, { method: 'PATCH', json: { memory_enabled: true } })).json(), { memory_enabled: true });
    let s = await detail(app, id);
    t.match(s, { is_pinned: true, shared: true, memory_enabled: true });
    t.same(await (await app.api(`/api/sessions/${id}/sharing`, { method: 'PATCH', json: { shared: false } })).json(), { shared: false });
    t.same(await (await app.api(`/api/sessions/${id}/memory`, { method: 'PATCH', json: { memory_enabled: false } })).json(), { memory_enabled: false });
    t.equal((await (await app.api(`/api/sessions/${id}/pin`, { method: 'PATCH', json: { pinned: false } })).json()).is_pinned, false);

    for (const [path, json] of [
      ['pin', { pinned: 'true' }],
      ['pin', {}],
      ['sharing', { shared: 1 }],
      ['sharing', { shared: true, x: 1 }],
      ['memory', { memory_enabled: null }],
      ['memory', { enabled: true }],
    ] as const) {
      const bad = await app.api(`/api/sessions/${id}/${path}`, { method: 'PATCH', json });
      t.equal(bad.status, 422, `${path} ${JSON.stringify(json)}`);
      t.equal((await bad.json()).code, 'VALIDATION_ERROR');
    }
    s = await detail(app, id);
    t.match(s, { is_pinned: false, shared: false, memory_enabled: false }, 'bad bodies changed nothing');
  });

  t.test('unknown ids and bad path params', async (t) => {
    for (const [method, path, json] of [
      ['GET', '', undefined],
      ['PATCH', '', { intent: 'x' }],
      ['DELETE', '', undefined],
      ['PUT', '/env', { env: {} }],
      ['PATCH', '/pin', { pinned: true }],
      ['PATCH', '/sharing', { shared: true }],
      ['PATCH', '/memory', { memory_enabled: true }],
      ['POST', '/upset_extra_info', { extra: {} }],
      ['GET', '/extra_info', undefined],
    ] as const) {
      const res = await app.api(`/api/sessions/sess_nope${path}`, { method, json });
      t.equal(res.status, 404, `${method} ${path}`);
      t.same(await res.json(), { detail: 'session not found', code: 'NOT_FOUND' });
    }
    const long = await app.api(`/api/sessions/${'x'.repeat(101)}`);
    // The router takes params up to 1000 characters (src/platform/server/app.ts): the schema refuses it.
    t.equal(long.status, 422, 'an over-long id is refused by the schema');

    t.equal((await app.api('/api/sessions/sess_%00')).status, 422, 'NUL in a path id is a 422, not a database error');
    t.equal((await app.api('/api/sessions', { key: null })).status, 401);
  });

  t.test('OpenAPI lists the session routes with their schemas', async (t) => {
    const doc = await (await app.api('/api/openapi.json', { key: null })).json();
    t.ok(doc.paths['/api/sessions'].post.requestBody, 'create documents its body');
    t.ok(doc.paths['/api/sessions'].get.parameters.some((p: { name: string }) => p.name === 'limit'), 'list documents its query');
    for (const [path, method] of [
      ['/api/sessions/{session_id}', 'get'],
      ['/api/sessions/{session_id}', 'patch'],
      ['/api/sessions/{session_id}', 'delete'],
      ['/api/sessions/{session_id}/env', 'put'],
      ['/api/sessions/{session_id}/pin', 'patch'],
      ['/api/sessions/{session_id}/sharing', 'patch'],
      ['/api/sessions/{session_id}/memory', 'patch'],
      ['/api/sessions/{session_id}/upset_extra_info', 'post'],
      ['/api/sessions/{session_id}/extra_info', 'get'],
      ['/api/sessions/extra_info/by_task/{task_id}', 'get'],
    ]) {
      t.ok(doc.paths[path]?.[method]?.responses?.['200'], `${method.toUpperCase()} ${path}`);
    }
  });
});

t.test('memory_enabled of a new session follows AGENTSVC_MEMORY_ENABLED unless the body sets it', async (t) => {
  const app = await build(t, { AGENTSVC_MEMORY_ENABLED: 'false' });
  const off = await (await app.api('/api/sessions', { method: 'POST', json: {} })).json();
  t.equal((await (await app.api(`/api/sessions/${off.session_id}`)).json()).memory_enabled, false);
  const on = await (await app.api('/api/sessions', { method: 'POST', json: { memory_enabled: true } })).json();
  t.equal((await (await app.api(`/api/sessions/${on.session_id}`)).json()).memory_enabled, true);
});
