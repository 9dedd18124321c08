import t from 'tap';
import { chatFixture, createSession, record, shape, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { pace, quietFor, waitFor } from '../helpers/wait.js';
import type { TestApp } from '../helpers/app.js';

/** Replay sessions (docs/time-travel.md): re-emitted like a live chat at 1, 2 or 5x, steered by PATCH, autonomous. */

function script(body: any) {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['written ', 'it'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'one') return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'hello\n' } }] };
  return { text: Array.from({ length: 20 }, (_, i) => `${user}-${i} `), delayMs: 50 };
}

const state = async (app: TestApp, sid: string) => (await (await app.api(`/api/sessions/${sid}`)).json()).replay_state;
async function untilStatus(app: TestApp, sid: string, status: string, ms = 30_000) {
  return waitFor(
    async () => {
      const s = await state(app, sid);
      return s?.status === status && s;
    },
    { timeoutMs: ms, everyMs: 100, what: `replay ${status}` },
  ).catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify(await state(app, sid))}`);
  });
}
const view = (msgs: any[]) => msgs.map((m) => [m.role, m.loop_id, m.kind, m.status, m.blocks.map((b: any) => `${b.type}:${b.content}`).join('|'), m.tool_calls.map((c: any) => `${c.tool_name}:${c.status}`).join('|')]);

t.test('a replay at speed 5, watched by a second client, is the source again', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  const t0 = Date.now();
  for (const [i, message] of ['one', 'two', 'three'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true);
    await untilEnd(seen, sid, 20_000, i + 1);
  }
  const sourceMs = Date.now() - t0;
  const fresh = await createSession(app);
  t.match(await (await app.api(`/api/sessions/${fresh}/replay/preview`)).json(), { session_id: fresh, supported: false, reason: /no finished chat/ });
  t.match(await (await app.api(`/api/sessions/${sid}/replay/preview`)).json(), { session_id: sid, supported: true, reason: null });

  const t1 = Date.now();
  const res = await app.api(`/api/sessions/${sid}/replay`, { method: 'POST', json: { speed: 5 } });
  t.equal(res.status, 200);
  const { session_id: rid } = await res.json();
  const watcher = app.socket();
  await next(watcher, 'connect');
  const got = record(watcher);
  await subscribe(watcher, rid, 0);
  const detail = await (await app.api(`/api/sessions/${rid}`)).json();
  t.equal(detail.intent, `Replay: ${(await (await app.api(`/api/sessions/${sid}`)).json()).intent}`);
  t.match(detail.replay_state, { source_session_id: sid, speed: 5, status: /playing|finished/ });
  await untilStatus(app, rid, 'finished');
  await untilEnd(got, rid, 20_000, 3);
  const replayMs = Date.now() - t1;
  t.comment(`source ${sourceMs} ms, replay at 5x ${replayMs} ms`);
  t.ok(replayMs < sourceMs, 'faster than the source');
  const src = (await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[];
  const rep = (await (await app.api(`/api/sessions/${rid}/messages`)).json()) as any[];
  t.same(view(rep), view(src), 'the same turns, stored in the replay session');
  const srcEvents = seen.filter((e) => e.payload.session_id === sid);
  const repEvents = got.filter((e) => e.payload.session_id === rid);
  t.same(shape(repEvents), shape(srcEvents), 'the same events, in order, as the source streamed them');
  t.same(
    repEvents.map((e) => e.payload.seq),
    repEvents.map((_, i) => i + 1),
    'its own seq',
  );
  const st = await state(app, rid);
  t.equal(st.position, st.total, 'position reached total');
  t.equal((await (await app.api(`/api/sessions/${rid}`)).json()).status, 'completed');
  // A finished replay is a session like any other.
  await subscribe(sock, rid);
  t.equal((await request(sock, 'chat:send', { session_id: rid, message: 'four' })).ok, true);
  await untilEnd(seen, rid);
  t.match(model.requests.at(-1).messages.filter((m: any) => m.role === 'user').map((m: any) => m.content), ['one', 'two', 'three', 'four']);
});

t.test('pause, change the pace, autonomous; refusals', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  for (const [i, message] of ['alpha', 'beta', 'gamma'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true);
    await untilEnd(seen, sid, 20_000, i + 1);
  }
  const patch = (rid: string, json: unknown, key?: string) => app.api(`/api/sessions/${rid}/replay`, { method: 'PATCH', json, key });
  t.equal((await app.api(`/api/sessions/${sid}/replay`, { method: 'POST', json: { speed: 3 } })).status, 422, 'speed 3');
  t.equal((await patch(sid, { speed: 2 })).status, 409, 'not a replay');
  t.equal((await (await patch(sid, { speed: 2 })).json()).code, 'NOT_A_REPLAY');
  const bob = await app.newUser('bob');
  t.equal((await app.api(`/api/sessions/${sid}/replay`, { method: 'POST', json: { speed: 1 }, key: bob.key })).status, 404, "another user's session");
  t.equal((await app.api(`/api/sessions/${sid}/replay/preview`, { key: bob.key })).status, 404);

  const { session_id: rid } = await (await app.api(`/api/sessions/${sid}/replay`, { method: 'POST', json: { speed: 1 } })).json();
  t.equal((await patch(rid, { speed: 4 })).status, 422, 'speed 4');
  t.equal((await patch(rid, { status: 'playing' })).status, 422, 'status outside its values');
  const paused = await (await patch(rid, { status: null })).json();
  t.match(paused, { replay_state: { status: 'paused' } });
  await pace(600, 'a step already in flight at the pause lands');
  const p1 = (await state(app, rid)).position;
  await quietFor(800, 'replay progress while paused');

  t.equal((await state(app, rid)).position, p1, 'paused: no progress');
  t.match(await (await patch(rid, { speed: 5 })).json(), { replay_state: { status: 'playing', speed: 5 } }, 'a new pace resumes');
  t.match(await request(sock, 'chat:send', { session_id: rid, message: 'x' }), { ok: false, error: { code: 'SESSION_BUSY' } }, 'busy while playing');
  // Straight to autonomous: a fixed wait here let a busy machine's replay play to its end at
  // speed 5 first, leaving nothing for the live agent (CI failed on it once in four runs).
  const n = model.requests.length;
  t.match(await (await patch(rid, { status: 'autonomous' })).json(), { replay_state: { status: 'autonomous' } });
  await untilStatus(app, rid, 'finished', 60_000);
  const live = model.requests.slice(n).map((r: any) => r.messages.filter((m: any) => m.role === 'user').at(-1).content);
  t.ok(live.length >= 1, `the live agent got the remaining messages: ${live.join(', ')}`);
  t.equal(live.at(-1), 'gamma', 'up to the last one');
  const users = ((await (await app.api(`/api/sessions/${rid}/messages`)).json()) as any[]).filter((m) => m.role === 'user').map((m) => m.blocks[0].content);
  t.same(users, ['alpha', 'beta', 'gamma'], 'each user message once: replayed, then sent live');
  t.equal((await patch(rid, { speed: 1 })).status, 409, 'a finished replay cannot be steered');
});

t.test('a replay plays the active branch only', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = (body: any) => ({ text: [`re: ${[...body.messages].reverse().find((m: any) => m.role === 'user').content}`] });
  let ends = 0;
  for (const message of ['one', 'two', 'three']) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true);
    await untilEnd(seen, sid, 20_000, ++ends);
  }
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.equal((await app.api(`/api/sessions/${sid}/rewind`, { method: 'POST', json: { checkpoint_id: cps[1].checkpoint_id } })).status, 200);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'other' })).ok, true);
  await untilEnd(seen, sid, 20_000, ++ends);
  const { session_id: rid } = await (await app.api(`/api/sessions/${sid}/replay`, { method: 'POST', json: { speed: 5 } })).json();
  await untilStatus(app, rid, 'finished');
  const msgs = (await (await app.api(`/api/sessions/${rid}/messages`)).json()) as any[];
  t.same(
    msgs.map((m) => `${m.role}:${m.blocks[0]?.content}`),
    ['user:one', 'assistant:re: one', 'user:other', 'assistant:re: other'],
    'the rewound path (two, three) is not replayed',
  );
});
