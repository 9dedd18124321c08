import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import type { TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';


// docs/models-and-usage.md: a usage record per model call, chat:end.usage, GET /api/usage with correct totals
// (checked against the turns), admin views, bad input.

const MODELS = JSON.stringify([{ id: 'fake-model', price: { input: 2, output: 8, cached_input: 1 } }, { id: 'free-model' }]);

function echo(app: TestApp) {
  app.service.tools.register(echoTool());
}

async function turnsUsage(app: TestApp, sid: string, key = app.adminKey) {
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`, { key })).json();
  return msgs.reduce((s: { input: number; output: number }, m: { usage: { input_tokens: number; output_tokens: number } }) => ({ input: s.input + m.usage.input_tokens, output: s.output + m.usage.output_tokens }), { input: 0, output: 0 });
}

async function usage(app: TestApp, query: string, key = app.adminKey) {
  const res = await app.api(`/api/usage${query}`, { key });
  return { status: res.status, body: await res.json() };
}

/** Wait until the inserts (off the streaming path) are in. */
async function untilCalls(app: TestApp, n: number, query = '', key = app.adminKey) {
  const counted = async () => {
    const r = await usage(app, query, key);
    return r.body.total?.calls >= n && r;
  };
  // Past the deadline the last answer is returned: the test's exact assertions then say what is missing.
  return waitFor(counted, { timeoutMs: 5000, everyMs: 20, what: `${n} calls counted` }).catch(() => usage(app, query, key));
}

t.test('usage: chat:end.usage, totals per session, model and day match the turns', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  echo(app);
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  model.script(
    { toolCalls: [{ name: 'Echo', args: { say: 'x' } }], usage: { prompt_tokens: 100, completion_tokens: 20 } },
    { text: ['done'], usage: { prompt_tokens: 130, completion_tokens: 10 } },
    { text: ['second run'], usage: { prompt_tokens: 150, completion_tokens: 5 } },
  );
  await request(sock, 'chat:send', { session_id: sid, message: 'one' });
  await untilEnd(seen, sid);
  const end1 = seen.filter((e) => e.name === 'chat:end').at(-1)!.payload;
  t.same(end1.usage, { input_tokens: 230, output_tokens: 30, cost: (230 * 2 + 30 * 8) / 1e6 }, 'chat:end.usage of the run');
  await request(sock, 'chat:send', { session_id: sid, message: 'two' });
  await untilEnd(seen, sid, 20_000, 2);
  t.same(seen.filter((e) => e.name === 'chat:end').at(-1)!.payload.usage, { input_tokens: 150, output_tokens: 5, cost: (150 * 2 + 5 * 8) / 1e6 });

  const bySession = await untilCalls(app, 3, '?group_by=session');
  const turns = await turnsUsage(app, sid);
  t.same(bySession.body.items, [{ key: sid, calls: 3, input_tokens: turns.input, output_tokens: turns.output, cost: (380 * 2 + 35 * 8) / 1e6 }], 'the sums of the turns');
  t.same(bySession.body.total, { calls: 3, input_tokens: 380, output_tokens: 35, cost: (380 * 2 + 35 * 8) / 1e6 });
  const byModel = await usage(app, '?group_by=model');
  t.same(byModel.body.items.map((i: { key: string }) => i.key), ['fake-model']);
  const byDay = await usage(app, '');
  t.match(byDay.body.items, [{ key: /^\d{4}-\d{2}-\d{2}$/, calls: 3 }], 'by day (the default)');
  const today = byDay.body.items[0].key;
  t.equal((await usage(app, `?from=${today}&to=${today}`)).body.total.calls, 3, 'a day as from and to covers it');
  t.equal((await usage(app, '?from=2001-01-01&to=2001-01-02')).body.total.calls, 0);
  t.equal((await usage(app, `?session_id=${sid}`)).body.total.calls, 3);
  // Deleting the session keeps what it spent.
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.equal((await usage(app, '?group_by=session')).body.total.calls, 3, 'spending outlives the session');
});

t.test('admin views; another user sees only their own; bad input is a 422', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  const bob = await app.newUser('bob');
  const bobSid = await createSession(app, bob.key);
  const { sock, seen } = await watch(app, bobSid, bob.key);
  await request(sock, 'chat:send', { session_id: bobSid, message: 'hi' });
  await untilEnd(seen, bobSid);
  const adminSid = await createSession(app);
  const w = await watch(app, adminSid);
  await request(w.sock, 'chat:send', { session_id: adminSid, message: 'hi' });
  await untilEnd(w.seen, adminSid);
  await untilCalls(app, 1, '', bob.key);
  await untilCalls(app, 1);
  t.equal((await usage(app, '', bob.key)).body.total.calls, 1, 'bob: his own call');
  t.equal((await usage(app, '?group_by=user', bob.key)).status, 403);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  t.equal((await usage(app, `?user_id=${me}`, bob.key)).status, 403);
  const byUser = await usage(app, '?group_by=user');
  t.same(byUser.body.items.map((i: { key: string }) => i.key).sort(), [bob.userId, me].sort(), 'admin: every user');
  t.equal((await usage(app, `?user_id=${bob.userId}`)).body.total.calls, 1, 'admin: one user');
  for (const q of ['?group_by=week', '?from=yesterday', '?from=2026-13-01', '?to=2026-02-30', '?from=2026-02-30T10:00:00Z', '?from=2026-01-02&to=2026-01-01', '?nope=1']) {
    const r = await usage(app, q);
    t.equal(r.status, 422, q);
    t.equal(r.body.code, 'VALIDATION_ERROR', q);
  }
});

t.test("a sub-agent's model calls count in the run's usage, the records and the turns", async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  model.script(
    { toolCalls: [{ name: 'Agent', args: { description: 'count', prompt: 'Count the files' } }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
    { text: ['three files'], usage: { prompt_tokens: 40, completion_tokens: 4 } },
    { text: ['there are three'], usage: { prompt_tokens: 120, completion_tokens: 6 } },
  );
  await request(sock, 'chat:send', { session_id: sid, message: 'how many files?' });
  await untilEnd(seen, sid, 30_000);
  t.equal(model.requests.length, 3, 'root, sub-agent, root');
  t.same(seen.at(-1)?.payload.usage, { input_tokens: 260, output_tokens: 20, cost: (260 * 2 + 20 * 8) / 1e6 });
  const r = await untilCalls(app, 3, `?session_id=${sid}`);
  const turns = await turnsUsage(app, sid);
  t.same([r.body.total.input_tokens, r.body.total.output_tokens], [turns.input, turns.output], 'records and turns agree');
  t.same([turns.input, turns.output], [260, 20]);
});

t.test("a compaction's model call is recorded (purpose compaction) and the totals still match the turns; turns carry their model's context window", async (t) => {
  const models = JSON.stringify([{ id: 'fake-model', context_window: 50_000, price: { input: 2, output: 8, cached_input: 1 } }]);
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODELS: models, AGENTSVC_CONTEXT_WINDOW: '200000', AGENTSVC_COMPACT_KEEP_TURNS: '2' });
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  for (let i = 0; i < 4; i++) {
    model.script({ text: [`answer ${i} `.repeat(20)], usage: { prompt_tokens: 100 + i, completion_tokens: 10 } });
    await request(sock, 'chat:send', { session_id: sid, message: `m${i}` });
    await untilEnd(seen, sid, 20_000, i + 1);
  }
  model.script({ text: ['- Goal: ', 'the summary.'], usage: { prompt_tokens: 700, completion_tokens: 7 } });
  const entry = await (await app.api(`/api/sessions/${sid}/compact`, { method: 'POST' })).json();
  t.match(entry, { kind: 'compaction', failure_reason: null, model: 'fake-model', usage: { input_tokens: 700, output_tokens: 7 } }, "the entry carries its call's usage");

  const r = await untilCalls(app, 5, `?session_id=${sid}`);
  const turns = await turnsUsage(app, sid);
  t.same(r.body.total, { calls: 5, input_tokens: 406 + 700, output_tokens: 47, cost: ((406 + 700) * 2 + 47 * 8) / 1e6 }, 'four turns and the compaction');
  t.same([r.body.total.input_tokens, r.body.total.output_tokens], [turns.input, turns.output], 'records and turns agree across the compaction');
  const rows = await app.service.db.sql<{ purpose: string; turn_id: string }>('select purpose, turn_id from model_usage where session_id = ? order by id', [sid]);
  t.same(
    rows.map((x) => x.purpose),
    ['turn', 'turn', 'turn', 'turn', 'compaction'],
  );
  t.equal(rows[4].turn_id, entry.turn_id, "the compaction's record names its entry");

  // docs/models-and-usage.md: a model's context_window is what its turns and the session's stats report.
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.same([...new Set(msgs.map((m: { context_window: number }) => m.context_window))], [50_000], 'every turn: the entry of its model');
  t.equal((await (await app.api(`/api/sessions/${sid}/context-stats`)).json()).context_window, 50_000, 'context-stats too');
});
