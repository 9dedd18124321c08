import t from 'tap';
import { build } from '../helpers/app.js';

t.test('API keys over REST', async (t) => {
  const app = await build(t);

  t.test('create returns the plaintext once, 201', async (t) => {
    const res = await app.api('/api/user/api-keys/', { method: 'POST', json: { name: 'laptop' } });
    t.equal(res.status, 201);
    const body = await res.json();
    t.match(body.plaintext, /^sk-agentsvc-v2-[0-9A-Za-z]{40}$/);
    t.equal(body.key.plaintext, body.plaintext);
    t.match(body.key.id, /^key_/);
    t.equal(body.key.masked, `sk-agentsvc-v2-****${body.plaintext.slice(-4)}`);
    t.equal(body.key.last_used_at, null);

    const me = await app.api('/api/auth/me', { key: body.plaintext });
    t.equal(me.status, 200);
    t.equal((await me.json()).username, 'admin');

    const got = await (await app.api(`/api/user/api-keys/${body.key.id}`)).json();
    t.equal(got.plaintext, null);
    t.equal(got.masked, body.key.masked);
    t.type(got.last_used_at, 'string', 'last_used_at kept after use');
    t.notOk(JSON.stringify(await (await app.api('/api/user/api-keys/')).json()).includes(body.plaintext), 'list never shows the plaintext');

    const renamed = await app.api(`/api/user/api-keys/${body.key.id}`, { method: 'PATCH', json: { name: 'laptop-2' } });
    t.equal((await renamed.json()).name, 'laptop-2');

    const del = await app.api(`/api/user/api-keys/${body.key.id}`, { method: 'DELETE' });
    t.equal(del.status, 204);
    t.equal(await del.text(), '');
    t.equal((await app.api('/api/auth/me', { key: body.plaintext })).status, 401);
    t.equal((await app.api(`/api/user/api-keys/${body.key.id}`)).status, 404);
  });

  t.test('bad input: contract body, nothing stored', async (t) => {
    const before = (await (await app.api('/api/user/api-keys/')).json()).length;
    const bad: [unknown, number][] = [
      [{ name: '' }, 422],
      [{ name: 'x'.repeat(51) }, 422],
      [{ name: 5 }, 422],
      [{}, 422],
      [{ name: 'ok', admin: true }, 422],
      [['name'], 422],
    ];
    for (const [json, status] of bad) {
      const res = await app.api('/api/user/api-keys/', { method: 'POST', json });
      t.equal(res.status, status, JSON.stringify(json));
      const body = await res.json();
      t.equal(body.code, 'VALIDATION_ERROR');
      t.ok(Array.isArray(body.detail) && body.detail.length > 0 && body.detail[0].loc, 'detail lists the fields');
    }
    const malformed = await app.api('/api/user/api-keys/', { method: 'POST', body: '{"name":', headers: { 'content-type': 'application/json' } });
    t.equal(malformed.status, 400);
    t.same(Object.keys(await malformed.json()).sort(), ['code', 'detail']);
    const huge = await app.api('/api/user/api-keys/', { method: 'POST', json: { name: 'x'.repeat(2 * 1024 * 1024) } });
    t.equal(huge.status, 413);
    t.equal((await huge.json()).code, 'PAYLOAD_TOO_LARGE');
    const longName = await app.api('/api/user/api-keys/x', { method: 'PATCH', json: { name: '' } });
    t.equal(longName.status, 422);
    t.equal((await (await app.api('/api/user/api-keys/')).json()).length, before, 'nothing stored');
  });

  t.test("another user's key is not found", async (t) => {
    const bob = await app.newUser('bob');
    const mine = await (await app.api('/api/user/api-keys/', { method: 'POST', json: { name: 'mine' } })).json();
    for (const [method, json] of [['GET'], ['PATCH', { name: 'stolen' }], ['DELETE']] as const) {
      const res = await app.api(`/api/user/api-keys/${mine.key.id}`, { method, key: bob.key, json });
      t.equal(res.status, 404, method);
      t.equal((await res.json()).code, 'NOT_FOUND');
    }
    t.equal((await (await app.api(`/api/user/api-keys/${mine.key.id}`)).json()).name, 'mine');
  });
});

t.test('auth, public paths, errors, OpenAPI', async (t) => {
  const app = await build(t, { AGENTSVC_MODELS: 'alpha,beta' });
  for (const path of ['/api/health', '/healthz', '/api/config']) {
    const res = await app.api(path, { key: null });
    t.equal(res.status, 200, path);
  }
  t.same(await (await app.api('/api/health', { key: null })).json(), { status: 'ok', checks: { database: 'ok', runner: 'ok' } });
  const cfg = await (await app.api('/api/config', { key: null })).json();
  t.equal(cfg.publicSharingEnabled, true);
  t.equal((await app.api('/api/config/models', { key: null })).status, 401);
  const models = await (await app.api('/api/config/models')).json();
  t.same(models.models.map((m: { id: string }) => m.id), [app.config.model.default, 'alpha', 'beta']);

  for (const header of [undefined, 'Bearer nope', 'Basic abc', `Bearer sk-agentsvc-v2-${'a'.repeat(40)}`]) {
    const res = await fetch(app.url + '/api/auth/me', { headers: header ? { authorization: header } : {} });
    t.equal(res.status, 401, String(header));
    t.same(await res.json(), { detail: 'missing or invalid API key', code: 'UNAUTHORIZED' });
  }
  const unknown = await app.api('/api/does-not-exist');
  t.equal(unknown.status, 404);
  t.equal((await unknown.json()).code, 'NOT_FOUND');
  t.equal((await app.api('/api/v1/sessions')).status, 404);

  const doc = await (await app.api('/api/openapi.json', { key: null })).json();
  t.match(doc.openapi, /^3\./);
  t.ok(doc.paths['/api/user/api-keys/'].post.requestBody, 'create key documents its body');
  t.ok(doc.paths['/api/user/api-keys/{key_id}'].patch, 'path params in OpenAPI form');
  t.ok(doc.paths['/api/auth/me'].get.responses['200']);
  const docs = await app.api('/api/docs', { key: null });
  t.equal(docs.status, 200);
  t.match(await docs.text(), /<title>agentsvc API<\/title>/, 'the API reference page');
});
