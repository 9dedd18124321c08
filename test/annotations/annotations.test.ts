import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { zipEntries } from '../portability/rawzip.js';

/** Payload annotations (docs/solutions-and-admin.md), exported and imported with their session; frontend config; GIS state. */


t.test('annotations on entries, turns and tool calls; isolation; bounds; export and import', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app, app.adminKey, { intent: 'annotated' });
  model.script({ text: ['Writing.'], toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'x' } }] }, { text: ['Done.'] });
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'go' })).ok, true);
  await untilEnd(seen, sid, 30_000);
  sock.disconnect();
  const turns = (await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[];
  const withCall = turns.find((x) => x.tool_calls.length);
  const entry = turns[0].id as string;
  const turn = turns.at(-1).turn_id as string;
  const call = withCall.tool_calls[0].id as string;
  t.match(entry, /^entry_/);
  t.match(call, /^tc_/);

  const url = (p: string) => `/api/payloads/${p}/annotations`;
  const post = (p: string, json: unknown, key = app.adminKey) => app.api(url(p), { method: 'POST', json, key });
  const made: Record<string, any> = {};
  for (const [p, label] of [
    [entry, 'question'],
    [turn, 'good answer'],
    [call, 'wrote a file'],
  ]) {
    const r = await post(p, { label, note: `note on ${p}`, data: { score: 5, tags: ['a'] } });
    t.equal(r.status, 200, `annotate ${p}`);
    made[p] = await r.json();
    t.match(made[p], { id: /^ann_/, payload_id: p, label, note: `note on ${p}`, data: { score: 5 } });
  }
  t.match(await (await app.api(url(call))).json(), { items: [{ id: made[call].id }] });

  const bob = await app.newUser('bob');
  t.equal((await post(call, { label: 'mine now' }, bob.key)).status, 404, "annotating another user's payload");
  t.equal((await app.api(url(call), { key: bob.key })).status, 404, "reading another user's payload");
  t.equal((await app.api(`${url(call)}/${made[call].id}`, { method: 'PATCH', json: { label: 'x' }, key: bob.key })).status, 404);
  t.equal((await app.api(`${url(call)}/${made[call].id}`, { method: 'DELETE', key: bob.key })).status, 404);
  t.equal((await post('tc_doesnotexist', { label: 'x' })).status, 404, 'unknown payload');
  t.equal((await post('sess_x', { label: 'x' })).status, 404, 'not a payload id');
  t.equal((await post(call, { label: 'x'.repeat(129) })).status, 422, 'label over 128');
  t.equal((await post(call, { note: 'x'.repeat(10_001) })).status, 422, 'note over 10000');
  t.equal((await post(call, { data: [1, 2] })).status, 422, 'data must be an object');
  t.equal((await post(call, { data: { big: 'x'.repeat(70_000) } })).status, 422, 'data over 64 KiB');
  t.equal((await post(call, { label: 'a\u0000b' })).status, 422, 'NUL');
  t.equal((await post(call, { color: 'red' })).status, 422, 'unknown field');
  t.equal((await post('x'.repeat(129), {})).status, 422, 'payload id over 128');
  t.equal((await (await app.api(url(call))).json()).items.length, 1, 'refused requests stored nothing');

  const patched = await app.api(`${url(call)}/${made[call].id}`, { method: 'PATCH', json: { note: 'edited' } });
  t.equal(patched.status, 200);
  const p = await patched.json();
  t.match(p, { label: 'wrote a file', note: 'edited', data: { score: 5 } });
  t.ok(p.updated_at >= made[call].updated_at);
  t.equal((await app.api(`${url(call)}/${made[call].id}`, { method: 'PATCH', json: { label: 7 } })).status, 422);
  t.equal((await app.api(`${url(entry)}/${made[call].id}`, { method: 'PATCH', json: { label: 'y' } })).status, 404, 'annotation of another payload');

  // Exported with the session, imported onto the new ids.
  const zip = Buffer.from(await (await app.api(`/api/sessions/${sid}/export`)).arrayBuffer());
  const files = await zipEntries(zip);
  const exported = JSON.parse(files.get('annotations.json')!);
  t.equal(exported.length, 3);
  t.match(exported, [{ payload_id: entry }, { payload_id: turn }, { payload_id: call, note: 'edited' }]);
  t.equal(JSON.parse(files.get('manifest.json')!).counts.annotations, 3);
  const form = new FormData();
  form.append('file', new Blob([zip]), 'session.zip');
  const imp = await app.api('/api/sessions/import', { method: 'POST', body: form });
  t.equal(imp.status, 200);
  const copy = (await imp.json()).session_id as string;
  const copyTurns = (await (await app.api(`/api/sessions/${copy}/messages`)).json()) as any[];
  const newCall = copyTurns.find((x) => x.tool_calls.length).tool_calls[0].id;
  t.not(newCall, call);
  t.match(await (await app.api(url(newCall))).json(), { items: [{ label: 'wrote a file', note: 'edited', data: { score: 5, tags: ['a'] } }] }, 'on the imported tool call');
  t.match(await (await app.api(url(copyTurns[0].id))).json(), { items: [{ label: 'question' }] });

  t.same(await (await app.api(`${url(call)}/${made[call].id}`, { method: 'DELETE' })).json(), { id: made[call].id, deleted: true });
  t.same((await (await app.api(url(call))).json()).items, []);
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.equal((await app.api(url(entry))).status, 404, 'the session gone, its payloads are gone');
  const left = await app.service.db.em().getConnection().execute('select count(*)::int as n from payload_annotations where session_id = ?', [sid]);
  t.equal(left[0].n, 0, 'its annotations went with it');
});

t.test('frontend config: any key reads, admins write, bounds', async (t) => {
  const { app } = await buildWithModel(t);
  const bob = await app.newUser('bob');
  const put = (path: string, json: unknown, key = app.adminKey) => app.api(`/api/frontend_config/${path}`, { method: 'PUT', json, key });
  t.equal((await app.api('/api/frontend_config/theme', { key: bob.key })).status, 404, 'unset');
  t.equal((await put('theme', { dark: true }, bob.key)).status, 403, 'not an admin');
  const r = await put('theme', { dark: true, accent: '#123' });
  t.equal(r.status, 200);
  t.same(await r.json(), { dark: true, accent: '#123' });
  const got = await app.api('/api/frontend_config/theme.json', { key: bob.key });
  t.equal(got.status, 200);
  t.same(await got.json(), { dark: true, accent: '#123' }, 'theme and theme.json are one file');
  t.equal((await put('pages/home', [1, 'two', null])).status, 200, 'nested path, any JSON');
  t.same(await (await app.api('/api/frontend_config/pages/home')).json(), [1, 'two', null]);
  t.equal((await put('big', { s: 'x'.repeat(1024 * 1024) })).status, 413, 'over 1 MiB');
  t.equal((await app.api('/api/frontend_config/big')).status, 404, 'nothing written');
  for (const bad of ['..%2Fadmin.key', '.hidden', 'a/../../admin.key', '%2e%2e/admin.key', 'a%00b']) {
    const s = (await app.api(`/api/frontend_config/${bad}`)).status;
    t.ok(s === 404 || s === 422, `${bad}: ${s}`);
    t.not((await put(bad, { x: 1 })).status, 200, `no write to ${bad}`);
  }
  t.equal((await app.api('/api/frontend_config/theme', { key: null })).status, 401, 'a key is needed');
  const bad = await app.api('/api/frontend_config/theme', { method: 'PUT', body: '{not json', headers: { 'content-type': 'application/json' } });
  t.equal(bad.status, 400, 'malformed JSON');
  t.same(await (await app.api('/api/frontend_config/theme')).json(), { dark: true, accent: '#123' }, 'unchanged');
});

t.test('GIS state: the session extra key gis', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  t.same(await (await app.api(`/api/gis/${sid}/state`)).json(), { session_id: sid, state: {} });
  await app.api(`/api/sessions/${sid}/upset_extra_info`, { method: 'POST', json: { extra: { gis: { center: [8.5, 47.4], zoom: 11, layers: ['roads'] }, other: 1 } } });
  t.same(await (await app.api(`/api/gis/${sid}/state`)).json(), { session_id: sid, state: { center: [8.5, 47.4], zoom: 11, layers: ['roads'] } });
  const bob = await app.newUser('bob');
  t.equal((await app.api(`/api/gis/${sid}/state`, { key: bob.key })).status, 404);
  t.equal((await app.api('/api/gis/sess_nope/state')).status, 404);
});
