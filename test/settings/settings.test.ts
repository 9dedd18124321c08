import t from 'tap';
import { build } from '../helpers/app.js';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** Preferences and env buckets (docs/memories-and-settings.md). */

t.test('preferences: strings per user, unset is null, bad input refused', async (t) => {
  const app = await build(t);
  const bob = await app.newUser('bob');
  t.same(await (await app.api('/api/user/preferences/theme')).json(), { value: null });
  t.same(await (await app.api('/api/user/preferences/theme', { method: 'PUT', json: { value: 'dark' } })).json(), { value: 'dark' });
  t.same(await (await app.api('/api/user/preferences/theme')).json(), { value: 'dark' });
  t.same(await (await app.api('/api/user/preferences/theme', { key: bob.key })).json(), { value: null }, 'per user');
  for (const [what, path, json] of [
    ['a number', 'theme', { value: 5 }],
    ['no value', 'theme', {}],
    ['key too long', 'k'.repeat(129), { value: 'x' }],
  ] as const) {
    t.equal((await app.api(`/api/user/preferences/${path}`, { method: 'PUT', json })).status, 422, what);
  }
  t.same(await (await app.api('/api/user/preferences/theme')).json(), { value: 'dark' }, 'unchanged');
});

t.test('env buckets: replace, list, delete; names checked; the default bucket reaches the tools under the session env', async (t) => {
  const { app, model } = await buildWithModel(t);
  const put = (b: string, env: unknown) => app.api(`/api/user/env-buckets/${b}`, { method: 'PUT', json: { env } });
  t.same(await (await put('default', { GREETING: 'from-bucket', SHARED: 'bucket' })).json(), { bucket: 'default', env: { GREETING: 'from-bucket', SHARED: 'bucket' } });
  t.same(await (await put('ci', { A: '1' })).json(), { bucket: 'ci', env: { A: '1' } });
  t.same(await (await put('ci', { B: '2' })).json(), { bucket: 'ci', env: { B: '2' } }, 'PUT replaces the map');
  t.same(((await (await app.api('/api/user/env-buckets')).json()) as any[]).map((b) => b.bucket), ['ci', 'default']);
  t.same(await (await app.api('/api/user/env-buckets/ci', { method: 'DELETE' })).json(), { bucket: 'ci', status: 'deleted' });
  t.equal((await app.api('/api/user/env-buckets/ci')).status, 404);
  t.equal((await app.api('/api/user/env-buckets/ci', { method: 'DELETE' })).status, 404);
  for (const [what, name, env] of [
    ['bad name', 'a b', {}],
    ['long name', 'n'.repeat(65), {}],
    ['bad variable', 'x', { 'NOT VALID': '1' }],
    ['reserved variable', 'x', { LD_PRELOAD: '/tmp/x.so' }],
    ['not a string', 'x', { A: 1 }],
  ] as const) {
    t.equal((await put(name, env)).status, 422, what);
  }
  const bob = await app.newUser('bob');
  t.same(await (await app.api('/api/user/env-buckets', { key: bob.key })).json(), [], 'per user');

  model.fallback = (body: any) =>
    body.messages.at(-1).role === 'tool' ? { text: ['done'] } : { toolCalls: [{ name: 'Bash', args: { command: 'echo "$GREETING/$SHARED"' } }] };
  const sid = await createSession(app, app.adminKey, { env: { SHARED: 'session' } });
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'env?' })).ok, true);
  await untilEnd(seen, sid);
  const result = seen.find((e) => e.payload.patch_type === 'tool_result')?.payload.data.result as string;
  t.match(result, 'from-bucket/session', 'the default bucket, under the session env');
});
