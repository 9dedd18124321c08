import t from 'tap';
import type { Socket } from 'socket.io-client';
import { Api } from '../../src/cli/terminal/api.js';
import { ChatSession } from '../../src/cli/terminal/chat.js';
import type { ServerEvent } from '../../src/cli/terminal/stream.js';
import { buildWithModel, createSession, type Recorded, subscribe, untilEnd } from '../helpers/chat.js';
import type { TestApp } from '../helpers/app.js';
import { request } from '../helpers/socket.js';
import { teamWorkspaceSession } from '../helpers/team-workspace.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A subscription lasts as long as its user may read the session (docs/identity.md, "When read access
 * goes"). The review found a member removed from a team workspace still receiving a teammate's
 * session live: subscribing checked once, nothing checked again. Now the socket gets
 * `session:closed` and nothing more of that session; the socket stays connected and the owner's own
 * subscription goes on. A deleted session's subscribers get `session:closed` NOT_FOUND.
 */

t.setTimeout(60_000);

/** A connected socket of `key` that records the events of the sessions it is subscribed to, by session. */
async function reader(app: TestApp, key: string) {
  const sock: Socket = app.socket(key);
  const seen: Recorded[] = [];
  sock.onAny((name, payload) => seen.push({ name, payload }));
  await waitFor(() => sock.connected, { what: 'the socket to connect' });
  return {
    sock,
    seen,
    of: (sid: string) => seen.filter((e) => e.payload?.session_id === sid),
    closed: (sid: string) => seen.find((e) => e.name === 'session:closed' && e.payload.session_id === sid),
    watch: (sid: string) => subscribe(sock, sid),
  };
}
type Reader = Awaited<ReturnType<typeof reader>>;

/** The events of `sid` after its `session:closed` on this socket (none is the claim). */
const after = (r: Reader, sid: string) => {
  const evs = r.of(sid);
  return evs.slice(evs.findIndex((e) => e.name === 'session:closed') + 1).map((e) => e.name);
};

t.test('leaving or being removed from a team workspace, or its deletion, ends the subscriptions it allowed', async (t) => {
  const { app } = await buildWithModel(t);
  const api = (path: string, key: string, method = 'GET', json?: unknown) => app.api(path, { method, key, json });
  const [alice, bob, carol, dave] = await Promise.all(['alice', 'bob', 'carol', 'dave'].map((n) => app.newUser(n)));
  const { ws, sid: team } = await teamWorkspaceSession(app, alice, [bob, carol]);
  const members = `/api/prod_workspaces/${ws}/members`;
  const carols = await createSession(app, carol.key, { intent: 'Carol in the team', workspace_id: ws });

  const [onAlice, onBob, onCarol] = await Promise.all([alice, bob, carol].map((u) => reader(app, u.key)));
  for (const r of [onAlice, onBob, onCarol]) await r.watch(team);
  await onAlice.watch(carols);
  const chat = async (message: string, count: number) => {
    t.match(await request(onAlice.sock, 'chat:send', { session_id: team, message }), { ok: true });
    await untilEnd(onAlice.seen, team, 20_000, count);
  };
  await chat('first', 1);
  await waitFor(() => onBob.of(team).some((e) => e.name === 'chat:end'), { what: 'the first chat on bob' });
  // Bob follows it in the terminal client too (`agentsvc chat <id>`).
  const inTerminal: ServerEvent[] = [];
  const terminal = await ChatSession.open(new Api({ url: app.url, urlFrom: 'test', key: bob.key, keyFrom: 'test', home: app.home }), team, (e) => inTerminal.push(e));
  t.teardown(() => terminal.close());

  // Alice removes bob over REST: his socket is told, and gets nothing more of the session.
  t.equal((await api(`${members}/${bob.userId}`, alice.key, 'DELETE')).status, 200, 'alice removes bob');
  const closed = await waitFor(() => onBob.closed(team), { what: "session:closed on bob's socket" });
  t.same(closed.payload, { session_id: team, code: 'NOT_FOUND', message: 'session not found' });
  await chat('second', 2);
  await waitFor(() => onCarol.of(team).filter((e) => e.name === 'chat:end').length === 2, { what: 'the second chat on carol' });
  t.same(after(onBob, team), [], 'bob: nothing of the session after session:closed while alice chats on');
  t.ok(onBob.sock.connected, "bob's socket stays connected");
  t.match(await request(onBob.sock, 'session:subscribe', { session_id: team }), { ok: false, error: { code: 'NOT_FOUND' } }, 'subscribing again is refused');
  t.notOk(onAlice.closed(team), "alice's own subscription goes on");
  t.notOk(onCarol.closed(team), "carol's goes on too");
  await waitFor(() => inTerminal.some((e) => e.name === 'session:closed'), { what: 'session:closed in the terminal client' });
  t.same(terminal.stream?.ended, { code: 'NOT_FOUND', message: 'session not found' }, 'the terminal stream stops');
  t.match(await terminal.send('hello').catch((e: unknown) => e), { kind: 'not_found', code: 'NOT_FOUND' }, 'and says so at once instead of waiting');

  // Carol leaves by herself: her subscription to alice's session ends, and alice's to hers.
  t.equal((await api(`${members}/${carol.userId}`, carol.key, 'DELETE')).status, 200, 'carol leaves');
  t.match((await waitFor(() => onCarol.closed(team), { what: "session:closed on carol's socket" })).payload, { session_id: team, code: 'NOT_FOUND' });
  t.match((await waitFor(() => onAlice.closed(carols), { what: "session:closed of carol's session on alice's socket" })).payload, { session_id: carols, code: 'NOT_FOUND' });
  await chat('third', 3);
  t.same(after(onCarol, team), [], 'carol: nothing of the session after session:closed');
  t.notOk(onAlice.closed(team), "alice's subscription to her own session still goes on");
  t.equal(onAlice.of(team).filter((e) => e.name === 'chat:end').length, 3);

  // The owner deletes the workspace: dave, a member since, stops reading; alice keeps her own.
  t.equal((await api(members, alice.key, 'POST', { user_id: dave.userId })).status, 200);
  const onDave = await reader(app, dave.key);
  await onDave.watch(team);
  t.equal((await api(`/api/prod_workspaces/${ws}`, alice.key, 'DELETE')).status, 200, 'alice deletes the workspace');
  t.match((await waitFor(() => onDave.closed(team), { what: "session:closed on dave's socket" })).payload, { session_id: team, code: 'NOT_FOUND' });
  await chat('fourth', 4);
  t.same(after(onDave, team), []);
  t.notOk(onAlice.closed(team), "alice's subscription survives the workspace");
});

t.test('a deleted session: each of its subscribers gets session:closed NOT_FOUND', async (t) => {
  const { app } = await buildWithModel(t);
  const [alice, bob] = await Promise.all(['alice', 'bob'].map((n) => app.newUser(n)));
  const { ws, sid: doomed } = await teamWorkspaceSession(app, alice, [bob], 'Doomed');
  const kept = await createSession(app, alice.key, { intent: 'Kept', workspace_id: ws });
  const [tab1, tab2, onBob] = await Promise.all([reader(app, alice.key), reader(app, alice.key), reader(app, bob.key)]);
  for (const r of [tab1, tab2, onBob]) await r.watch(doomed);
  await onBob.watch(kept);

  t.equal((await app.api(`/api/sessions/${doomed}`, { method: 'DELETE', key: alice.key })).status, 200, 'alice deletes the session in one tab');
  for (const [who, r] of [['the tab that deleted it', tab1], ['her other tab', tab2], ['bob, a reader', onBob]] as const) {
    const closed = await waitFor(() => r.closed(doomed), { what: `session:closed on ${who}` });
    t.same(closed.payload, { session_id: doomed, code: 'NOT_FOUND', message: 'session not found' }, who);
  }
  // The other session of the same sockets goes on: alice chats in it, bob sees the run end.
  t.match(await request(tab2.sock, 'chat:send', { session_id: kept, message: 'still here' }), { ok: true });
  await waitFor(() => onBob.of(kept).some((e) => e.name === 'chat:end'), { what: "the chat of the kept session on bob's socket" });
  t.notOk(onBob.closed(kept), "bob's other subscription goes on");
  t.same(after(onBob, doomed), [], 'nothing of the deleted session after session:closed');
});
