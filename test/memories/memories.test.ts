import t from 'tap';
import { build } from '../helpers/app.js';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** Memories (docs/memories-and-settings.md): REST, search, batch, isolation, and their use across chats. */

t.test('memories over REST: create, read, update, disable, list filters and search, batch, isolation', async (t) => {
  const app = await build(t);
  const post = async (json: unknown, key?: string) => {
    const r = await app.api('/api/memories', { method: 'POST', json, key });
    return { status: r.status, body: await r.json() };
  };
  const a = await post({ content: 'The deploy script lives in ops/deploy.sh', topic: 'ops', scope: 'project' });
  t.equal(a.status, 201);
  t.match(a.body, { id: Number, type: 'feedback', content: 'The deploy script lives in ops/deploy.sh', topic: 'ops', scope: 'project', hit_count: 0, disabled: false, source_session: '', updated_at: null, last_hit_at: null });
  const b = (await post({ content: 'Always run the linter before committing', type: 'experience', skill_name: 'git' })).body;
  const c = (await post({ content: 'Tabs, not spaces, in Makefiles', record_type: 'skill_comment' })).body;
  t.same(await (await app.api(`/api/memories/${a.body.id}`)).json(), a.body);

  const list = async (q = '') => (await (await app.api(`/api/memories${q}`)).json()) as { items: any[]; total: number };
  t.same((await list()).items.map((m) => m.id), [c.id, b.id, a.body.id], 'newest first');
  t.same((await list('?keyword=linter')).items.map((m) => m.id), [b.id], 'full-text word');
  t.same((await list('?keyword=deploy.sh')).items.map((m) => m.id), [a.body.id], 'substring fallback');
  t.same((await list('?type=experience')).items.map((m) => m.id), [b.id]);
  t.same((await list('?skill_name=git&type=experience')).items.map((m) => m.id), [b.id]);
  t.same((await list('?topic=ops')).items.map((m) => m.id), [a.body.id]);
  t.same((await list('?record_type=skill_comment')).items.map((m) => m.id), [c.id]);
  t.match(await list('?limit=1&offset=1'), { total: 3, items: [{ id: b.id }] });

  const put = await (await app.api(`/api/memories/${a.body.id}`, { method: 'PUT', json: { topic: null, owner: 'alice' } })).json();
  t.match(put, { topic: null, owner: 'alice', scope: 'project', content: a.body.content });
  t.ok(put.updated_at);
  t.match(await (await app.api(`/api/memories/${c.id}`, { method: 'PATCH', json: { disabled: true } })).json(), { disabled: true });
  t.same((await list('?status=active')).items.map((m) => m.id), [b.id, a.body.id]);
  t.same((await list('?status=disabled')).items.map((m) => m.id), [c.id]);

  const bob = await app.newUser('bob');
  const bobs = (await post({ content: 'bob memory' }, bob.key)).body;
  t.equal((await app.api(`/api/memories/${a.body.id}`, { key: bob.key })).status, 404, "another user's memory");
  t.equal((await app.api(`/api/memories/${a.body.id}`, { method: 'DELETE', key: bob.key })).status, 404);
  t.same(await (await app.api('/api/memories/batch', { method: 'POST', json: { action: 'disable', ids: [a.body.id, b.id, bobs.id, 999999] } })).json(), { ok: true, count: 2 }, 'unknown and foreign ids ignored');
  t.match(await (await app.api(`/api/memories/${bobs.id}`, { key: bob.key })).json(), { disabled: false }, "bob's memory untouched");
  t.same(await (await app.api('/api/memories/batch', { method: 'POST', json: { action: 'delete', ids: [c.id] } })).json(), { ok: true, count: 1 });
  t.same(await (await app.api(`/api/memories/${a.body.id}`, { method: 'DELETE' })).json(), { ok: true });
  t.equal((await app.api(`/api/memories/${a.body.id}`)).status, 404);

  for (const [what, body] of [
    ['empty content', { content: '' }],
    ['long content', { content: 'x'.repeat(501) }],
    ['bad type', { content: 'x', type: 'gossip' }],
    ['long topic', { content: 'x', topic: 't'.repeat(256) }],
    ['NUL', { content: 'a\u0000' }],
    ['unknown field', { content: 'x', mood: 'happy' }],
  ] as const) {
    t.equal((await post(body)).status, 422, what);
  }
  t.equal((await app.api('/api/memories?limit=0')).status, 422);
  t.equal((await app.api('/api/memories?limit=101')).status, 422);
  t.equal((await app.api('/api/memories/batch', { method: 'POST', json: { action: 'delete', ids: [] } })).status, 422);
  t.equal((await app.api('/api/memories/batch', { method: 'POST', json: { action: 'delete', ids: Array.from({ length: 101 }, (_, i) => i + 1) } })).status, 422);
  t.equal((await app.api('/api/memories/abc')).status, 422);
  t.equal((await list()).total, 1, 'only b is left');
});

t.test('a memory written in chat 1 is used in chat 2 (memory_enabled), not in a session without it', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) => {
    const last = body.messages.at(-1);
    if (last.role === 'tool') return { text: ['noted'] };
    const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
    if (user.startsWith('remember')) return { toolCalls: [{ name: 'Memory', args: { content: 'The user indents Python with tabs', topic: 'style' } }] };
    return { text: ['ok'] };
  };
  const s1 = await createSession(app, app.adminKey, { memory_enabled: true });
  const w1 = await watch(app, s1);
  t.equal((await request(w1.sock, 'chat:send', { session_id: s1, message: 'remember how I indent' })).ok, true);
  await untilEnd(w1.seen, s1);
  t.ok(
    model.requests[0].tools.some((x: any) => x.function.name === 'Memory'),
    'the Memory tool is offered',
  );
  const [mem] = (await (await app.api('/api/memories')).json()).items;
  t.match(mem, { content: 'The user indents Python with tabs', type: 'experience', source_session: s1, topic: 'style' });

  const s2 = await createSession(app, app.adminKey, { memory_enabled: true });
  const w2 = await watch(app, s2);
  const n = model.requests.length;
  t.equal((await request(w2.sock, 'chat:send', { session_id: s2, message: 'How should I indent my Python code?' })).ok, true);
  await untilEnd(w2.seen, s2);
  t.match(model.requests[n].messages[0].content, /The user indents Python with tabs/, 'the memory is in the system prompt of chat 2');
  const [user] = await (await app.api(`/api/sessions/${s2}/messages`)).json();
  t.match(user.memory_refs, [{ id: mem.id }], 'memory_refs on the user turn');
  t.match(await (await app.api(`/api/memories/${mem.id}`)).json(), { hit_count: 1, last_hit_at: String });

  const s3 = await createSession(app, app.adminKey, { memory_enabled: false });
  const w3 = await watch(app, s3);
  const m = model.requests.length;
  t.equal((await request(w3.sock, 'chat:send', { session_id: s3, message: 'How should I indent my Python code?' })).ok, true);
  await untilEnd(w3.seen, s3);
  t.notMatch(model.requests[m].messages[0].content, /indents Python/, 'not without memory_enabled');
  t.notOk(
    model.requests[m].tools.some((x: any) => x.function.name === 'Memory'),
    'nor the tool',
  );
  await app.api(`/api/memories/${mem.id}`, { method: 'PATCH', json: { disabled: true } });
  const s4 = await createSession(app, app.adminKey, { memory_enabled: true });
  const w4 = await watch(app, s4);
  const k = model.requests.length;
  await request(w4.sock, 'chat:send', { session_id: s4, message: 'How should I indent my Python code?' });
  await untilEnd(w4.seen, s4);
  t.notMatch(model.requests[k].messages[0].content, /indents Python/, 'a disabled memory is not used');
});
