import t from 'tap';
import { ROUTE_ROLES } from '../../src/features/identity/role-table.js';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Team workspaces' sessions are read by the workspace's members and changed by their owners only
 * (docs/identity.md "What each role reads and does"): a member and a viewer of the workspace read
 * the list, the detail, the messages, the history, the files and the live stream of a teammate's
 * session; a viewer is refused every change with FORBIDDEN_ROLE, a member with the 404 of another
 * user's session; anyone outside the workspace gets exactly the answer a session that does not
 * exist gets, on every session route and socket event.
 */

t.setTimeout(120_000);

type Api = (path: string, key: string, method?: string, json?: unknown) => Promise<Response>;

/** A registered route's path with its parameters filled: the session, a file, anything else `x`. */
function pathOf(route: string, sessionId: string): string {
  // `::` is fastify's escaped colon (`skills::upload` is `skills:upload`), not a parameter.
  return route
    .replace('::', '\0')
    .replace(':session_id', sessionId)
    .replace(/\/\*$/, '/notes.txt')
    .replace(/:[a-z_]+/g, 'x')
    .replace('\0', ':');
}

/** Every session route of the role table, `[method, path]`, the readers' and the changes. */
const SESSION_ROUTES = Object.keys(ROUTE_ROLES)
  .filter((k) => k.includes(':session_id') && !k.startsWith('GET /apps/'))
  .map((k) => k.split(' ') as [string, string]);
const CHANGES = SESSION_ROUTES.filter(([m, p]) => !(ROUTE_ROLES[`${m} ${p}`] as string[]).includes('viewer'));

t.test('members and viewers of a team workspace read its sessions; nobody else does; only the owner changes them', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RATE_LIMIT_PER_MINUTE: '0' });
  const api: Api = (path, key, method = 'GET', json) => app.api(path, { method, key, json: method === 'GET' || method === 'HEAD' ? undefined : (json ?? {}) });
  const [alice, bob, carol, dave, erin] = await Promise.all(['alice', 'bob', 'carol', 'dave', 'erin'].map((n) => app.newUser(n)));
  for (const v of [carol, erin]) t.equal((await app.api(`/api/admin/users/${v.userId}`, { method: 'PATCH', json: { role: 'viewer' } })).status, 200);

  // Alice's workspace: bob a member, carol a viewer; dave (member) and erin (viewer) are not in it.
  const ws = (await (await api('/api/prod_workspaces', alice.key, 'POST', { name: 'Infra' })).json()).id as string;
  for (const u of [bob, carol]) t.equal((await api(`/api/prod_workspaces/${ws}/members`, alice.key, 'POST', { user_id: u.userId })).status, 200);
  const team = await createSession(app, alice.key, { intent: 'Team job', workspace_id: ws, env: { ALICE_TOKEN: 'alice-secret' } });
  const own = await createSession(app, alice.key, { intent: 'Private' });
  const bobs = await createSession(app, bob.key, { intent: 'Bob in the team', workspace_id: ws });
  const ghost = 'sess_doesnotexist000000000';
  t.equal((await api(`/api/sessions/${team}/files/notes.txt`, alice.key, 'PUT', { content: 'team notes' })).status, 200);

  // A finished chat in the team session, so there is something to read and to replay.
  const aliceSock = app.socket(alice.key);
  const aliceSeen = record(aliceSock);
  await waitFor(() => aliceSock.connected, { what: "alice's socket" });
  await subscribe(aliceSock, team);
  model.script({ text: ['Hello ', 'team.'] });
  t.match(await request(aliceSock, 'chat:send', { session_id: team, message: 'say hello' }), { ok: true });
  await untilEnd(aliceSeen, team);
  const ownerMessages = await (await api(`/api/sessions/${team}/messages`, alice.key)).json();
  const ownerDetail = await (await api(`/api/sessions/${team}`, alice.key)).json();
  t.equal(ownerDetail.viewer_role, 'owner');
  t.same(ownerDetail.env, { ALICE_TOKEN: 'alice-secret' });

  t.test('reading: the list by workspace, the detail, messages, history, context statistics, files', async (t) => {
    for (const [who, u] of [['bob (member)', bob], ['carol (viewer)', carol]] as const) {
      const list = await (await api(`/api/sessions?workspace_id=${ws}`, u.key)).json();
      t.same(list.items.map((s: { id: string }) => s.id).sort(), [team, bobs].sort(), `${who}: the workspace's sessions, not alice's private one`);
      t.equal(list.total, 2);
      const found = await (await api(`/api/sessions?workspace_id=${ws}&q=hello`, u.key)).json();
      t.same(found.items.map((s: { id: string }) => s.id), [team], `${who}: q searches the workspace's turns`);
      const mine = await (await api('/api/sessions', u.key)).json();
      t.notOk(mine.items.some((s: { id: string }) => s.id === team), `${who}: without workspace_id the list is their own, as before`);

      const detail = await api(`/api/sessions/${team}`, u.key);
      t.equal(detail.status, 200);
      const d = await detail.json();
      const { env: _env, viewer_role: _role, ...shared } = ownerDetail;
      t.match(d, { ...shared, viewer_role: 'reader' }, `${who}: the detail as a reader`);
      t.notOk('env' in d, `${who}: not the owner's env`);
      t.same(await (await api(`/api/sessions/${team}/messages`, u.key)).json(), ownerMessages, `${who}: the same turns as the owner's`);
      t.equal((await api(`/api/sessions/${team}/history`, u.key)).status, 200);
      t.equal((await api(`/api/sessions/${team}/context-stats`, u.key)).status, 200);
      t.match(await (await api(`/api/sessions/${team}/ls`, u.key)).json(), [{ name: 'notes.txt' }], `${who}: ls`);
      t.equal(await (await api(`/api/sessions/${team}/files/notes.txt`, u.key)).text(), 'team notes', `${who}: a file`);
      const zip = await api(`/api/sessions/${team}/download-dir`, u.key);
      t.equal(zip.status, 200);
      t.equal(zip.headers.get('content-type'), 'application/zip');
      t.equal((await api(`/api/sessions/${own}`, u.key)).status, 404, `${who}: alice's private session stays hers`);
    }
    // Other reads stay the owner's: a teammate gets the 404 of another user's session.
    for (const path of ['checkpoints', 'export', 'extra_info', 'policy']) t.equal((await api(`/api/sessions/${team}/${path}`, bob.key)).status, 404, `${path} stays the owner's`);
  });

  t.test('outside the workspace: exactly the answer of a session that does not exist, on every session route', async (t) => {
    for (const [who, u] of [['dave (member)', dave], ['erin (viewer)', erin]] as const) {
      const list = await api(`/api/sessions?workspace_id=${ws}`, u.key);
      t.equal(list.status, 404, `${who}: another team's list`);
      t.same(await list.json(), { detail: 'workspace not found', code: 'NOT_FOUND' });
      for (const [method, route] of SESSION_ROUTES) {
        const asked = await api(pathOf(route, team), u.key, method);
        const none = await api(pathOf(route, ghost), u.key, method);
        const [a, b] = [await asked.text(), (await none.text()).replaceAll(ghost, team)];
        t.same([asked.status, a], [none.status, b], `${who}: ${method} ${route}`);
      }
      const sock = app.socket(u.key);
      await waitFor(() => sock.connected, { what: `${who}'s socket` });
      for (const [event, payload] of [
        ['session:subscribe', { since_seq: 0 }],
        ['chat:send', { message: 'hi' }],
        ['chat:stop', {}],
        ['chat:compact', {}],
      ] as const) {
        const asked = await request(sock, event, { session_id: team, ...payload });
        const none = await request(sock, event, { session_id: ghost, ...payload });
        t.same(asked, none, `${who}: ${event}`);
        t.equal(asked.ok, false);
      }
      sock.disconnect();
    }
  });

  t.test('watching live: a member and a viewer subscribe, replay and follow the next chat', async (t) => {
    const watchers = [bob, carol].map((u) => {
      const sock = app.socket(u.key);
      return { sock, seen: record(sock) };
    });
    for (const w of watchers) {
      await waitFor(() => w.sock.connected, { what: 'a reader socket' });
      await subscribe(w.sock, team, 0);
      await untilEnd(w.seen, team);
    }
    model.script({ text: ['Second ', 'answer.'] });
    t.match(await request(aliceSock, 'chat:send', { session_id: team, message: 'again' }), { ok: true });
    for (const w of watchers) {
      await untilEnd(w.seen, team, 20_000, 2);
      const seqs = w.seen.filter((e) => e.payload?.session_id === team).map((e) => e.payload.seq);
      t.same(seqs, seqs.map((_, i) => i + 1), 'every event of the session once, in order, from the first');
      w.sock.disconnect();
    }
  });

  t.test('a viewer changes nothing: FORBIDDEN_ROLE on every changing route and socket event', async (t) => {
    for (const [method, route] of CHANGES) {
      const r = await api(pathOf(route, team), carol.key, method);
      t.equal(r.status, 403, `${method} ${route}`);
      t.match(await r.json(), { code: 'FORBIDDEN_ROLE' });
    }
    t.equal((await api('/api/inbox/call_x/answer', carol.key, 'POST', { selections: {} })).status, 403, 'answering from the inbox');
    const assistant = await api(`/api/prod_workspaces/${ws}/assistant-session`, carol.key);
    t.equal(assistant.status, 403, 'a viewer gets no assistant session made for them');
    t.match(await assistant.json(), { code: 'FORBIDDEN_ROLE', detail: 'a viewer may not create a session' });
    t.equal((await (await api('/api/sessions', carol.key)).json()).total, 0, 'nothing was created');
    const sock = app.socket(carol.key);
    await waitFor(() => sock.connected, { what: "carol's socket" });
    for (const [event, payload] of [
      ['chat:send', { message: 'hi' }],
      ['chat:send', { message: '', askuser_answer: { tool_call_id: 'call_x', selections: { '0': [0] } } }],
      ['chat:stop', {}],
      ['chat:compact', {}],
    ] as const) {
      t.same(await request(sock, event, { session_id: team, ...payload }), { ok: false, error: { code: 'FORBIDDEN_ROLE', message: `a viewer may not use ${event}` } }, event);
    }
    sock.disconnect();
  });

  t.test("a member changes nothing of a teammate's session: the 404 of another user's session", async (t) => {
    const cases: [string, string, unknown?][] = [
      ['PATCH', '', { intent: 'renamed' }],
      ['DELETE', ''],
      ['PUT', '/env', { env: { X: '1' } }],
      ['PATCH', '/pin', { pinned: true }],
      ['PATCH', '/sharing', { shared: true }],
      ['PATCH', '/memory', { memory_enabled: true }],
      ['POST', '/upset_extra_info', { extra: { a: 1 } }],
      ['PUT', '/files/notes.txt', { content: 'overwritten' }],
      ['DELETE', '/files/notes.txt'],
      ['POST', '/files/notes.txt/rename', { new_name: 'moved.txt' }],
      ['POST', '/share', {}],
      ['POST', '/compact', {}],
      ['POST', '/replay', { speed: 1 }],
    ];
    for (const [method, tail, json] of cases) {
      const r = await api(`/api/sessions/${team}${tail}`, bob.key, method, json);
      t.same([r.status, await r.json()], [404, { detail: 'session not found', code: 'NOT_FOUND' }], `${method} ...${tail}`);
    }
    // Every other changing route, with whatever body: refused, never done.
    for (const [method, route] of CHANGES) {
      const r = await api(pathOf(route, team), bob.key, method);
      t.ok(r.status >= 400 && r.status < 500, `${method} ${route}: ${r.status}`);
    }
    const sock = app.socket(bob.key);
    await waitFor(() => sock.connected, { what: "bob's socket" });
    for (const [event, payload] of [
      ['chat:send', { message: 'hi' }],
      ['chat:stop', {}],
      ['chat:compact', {}],
    ] as const) {
      t.match(await request(sock, event, { session_id: team, ...payload }), { ok: false, error: { code: 'NOT_FOUND' } }, event);
    }
    sock.disconnect();
    // Nothing changed.
    const after = await (await api(`/api/sessions/${team}`, alice.key)).json();
    const kept = (d: Record<string, unknown>) => ({ intent: d.intent, is_pinned: d.is_pinned, shared: d.shared, memory_enabled: d.memory_enabled, env: d.env });
    t.same(kept(after), kept(ownerDetail), 'the session as it was');
    t.equal((await (await api(`/api/sessions/${team}/extra_info`, alice.key)).json()).extra.a, undefined);
    t.equal(await (await api(`/api/sessions/${team}/files/notes.txt`, alice.key)).text(), 'team notes');
    t.equal((await (await api(`/api/sessions/${team}/messages`, alice.key)).json()).length, ownerMessages.length + 2, 'only the second chat of alice');
  });

  t.test('leaving the workspace ends reading both ways', async (t) => {
    t.equal((await api(`/api/sessions/${bobs}`, alice.key)).status, 200, "alice reads bob's workspace session");
    t.equal((await api(`/api/prod_workspaces/${ws}/members/${bob.userId}`, bob.key, 'DELETE')).status, 200, 'bob leaves');
    t.equal((await api(`/api/sessions/${team}`, bob.key)).status, 404, "bob no longer reads alice's");
    t.equal((await api(`/api/sessions?workspace_id=${ws}`, bob.key)).status, 404);
    t.equal((await api(`/api/sessions/${bobs}`, alice.key)).status, 404, "nor alice bob's");
    t.same((await (await api(`/api/sessions?workspace_id=${ws}`, carol.key)).json()).items.map((s: { id: string }) => s.id), [team]);
    t.equal((await api(`/api/sessions/${bobs}`, bob.key)).status, 200, 'bob keeps his own');
  });
});
