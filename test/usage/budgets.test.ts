import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import type { TestApp } from '../helpers/app.js';

// docs/models-and-usage.md budgets: checked before each model call; 80% warns once; a spent one ends the run
// `completed`/`budget` and refuses the next chat:send with when it resets.

function echo(app: TestApp) {
  app.service.tools.register(echoTool());
}

const loop = { toolCalls: [{ name: 'Echo', args: { say: 'again' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } };

t.test('a session budget stops a run mid-task; the next chat:send is refused', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_TIMEZONE: 'Europe/Berlin' });
  echo(app);
  model.fallback = loop; // the model would go on calling tools for ever
  const sid = await createSession(app);
  const put = await app.api(`/api/sessions/${sid}/budget`, { method: 'PUT', json: { budgets: [{ period: 'day', max_tokens: 50 }] } });
  t.equal(put.status, 200);
  t.match((await put.json()).budgets, [{ scope: 'session', session_id: sid, period: 'day', max_tokens: 50, max_cost: null, used_tokens: 0 }]);
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'work' });
  await untilEnd(seen, sid);
  // 15 tokens a call: 15, 30, 45 (past 80% of 50: one warning), 60 (spent): the fifth is not made.
  t.equal(model.requests.length, 4, 'four model calls, the last one over the budget');
  const notices = seen.filter((e) => e.name === 'system:notice');
  t.equal(notices.length, 1, 'one warning');
  t.match(notices[0].payload, { code: 'BUDGET_WARNING', scope: 'session', used_tokens: 45, max_tokens: 50, message: /past 80%/ });
  t.match(seen.find((e) => e.name === 'system:error')?.payload, { code: 'BUDGET_EXCEEDED', message: /session budget \(per day: 60 of 50 tokens\) is spent; it resets at/ });
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'budget', usage: { input_tokens: 40, output_tokens: 20 } } });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.ok(msgs.every((m: { tool_calls: { result: string | null }[] }) => m.tool_calls.every((c) => c.result !== null)), 'every tool call has its result');

  const ack = await request(sock, 'chat:send', { session_id: sid, message: 'more' });
  t.match(ack, { ok: false, error: { code: 'BUDGET_EXCEEDED', message: /session budget.*resets at \d{4}-\d{2}-\d{2}T(22|23):00:00\.000Z/ } }, 'refused, with the reset (Berlin midnight)');
  t.equal(model.requests.length, 4, 'nothing called');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'completed', 'the session is unchanged');

  const budgets = await (await app.api(`/api/budgets?session_id=${sid}`)).json();
  t.match(budgets.budgets, [{ scope: 'session', used_tokens: 60, resets_at: /T(22|23):00:00\.000Z$/ }]);
  // Raising the budget lets the session go on.
  await app.api(`/api/sessions/${sid}/budget`, { method: 'PUT', json: { budgets: [{ period: 'day', max_tokens: 1000 }] } });
  model.fallback = { text: ['fine'] };
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'more' }), { ok: true });
  await untilEnd(seen, sid, 20_000, 2);
  t.match(seen.at(-1)?.payload, { status: 'completed', finish_reason: 'stop' });
});

t.test("a user's budget is an admin's to set; another user's session budget is theirs alone", async (t) => {
  const { app, model } = await buildWithModel(t);
  const bob = await app.newUser('bob');
  const path = `/api/admin/users/${bob.userId}/budgets`;
  t.equal((await app.api(path, { method: 'PUT', json: { budgets: [] }, key: bob.key })).status, 403, 'not an admin');
  t.equal((await app.api('/api/admin/users/nobody/budgets', { method: 'PUT', json: { budgets: [] } })).status, 404);
  for (const body of [{ budgets: [{ period: 'week', max_tokens: 1 }] }, { budgets: [{ period: 'day' }] }, { budgets: [{ period: 'day', max_cost: -1 }] }, {}]) {
    const r = await app.api(path, { method: 'PUT', json: body });
    t.equal(r.status, 422, JSON.stringify(body));
  }
  t.equal((await app.api(path, { method: 'PUT', json: { budgets: [{ period: 'month', max_cost: 0.000001 }, { period: 'total', max_tokens: 10 }] } })).status, 200);
  const mine = await (await app.api('/api/budgets', { key: bob.key })).json();
  t.match(mine.budgets, [{ scope: 'user', period: 'month', max_cost: 0.000001 }, { scope: 'user', period: 'total', max_tokens: 10, resets_at: null }]);
  const bobSid = await createSession(app, bob.key);
  t.equal((await app.api(`/api/sessions/${bobSid}/budget`, { method: 'PUT', json: { budgets: [] } })).status, 404, "another user's session");
  t.equal((await app.api(`/api/budgets?session_id=${bobSid}`)).status, 404);
  const { sock, seen } = await watch(app, bobSid, bob.key);
  await request(sock, 'chat:send', { session_id: bobSid, message: 'one' });
  await untilEnd(seen, bobSid);
  t.match(seen.at(-1)?.payload, { status: 'completed', finish_reason: 'stop' }, 'the first run fits (checked before its call)');
  const ack = await request(sock, 'chat:send', { session_id: bobSid, message: 'two' });
  t.match(ack, { ok: false, error: { code: 'BUDGET_EXCEEDED', message: /user budget \(total: 15 of 10 tokens\) is spent; it does not reset/ } });
  t.equal(model.requests.length, 1);
  // The admin's own runs are not bob's budget.
  const sid = await createSession(app);
  const w = await watch(app, sid);
  t.match(await request(w.sock, 'chat:send', { session_id: sid, message: 'mine' }), { ok: true });
  await untilEnd(w.seen, sid);
});

t.test('the install budget (AGENTSVC_BUDGETS) counts every user', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_BUDGETS: JSON.stringify([{ period: 'month', max_tokens: 20 }]) });
  const bob = await app.newUser('bob');
  const bobSid = await createSession(app, bob.key);
  const b = await watch(app, bobSid, bob.key);
  await request(b.sock, 'chat:send', { session_id: bobSid, message: 'one' });
  await untilEnd(b.seen, bobSid);
  const sid = await createSession(app);
  const w = await watch(app, sid);
  await request(w.sock, 'chat:send', { session_id: sid, message: 'one' });
  await untilEnd(w.seen, sid);
  t.match(w.seen.filter((e) => e.name === 'system:notice'), [{ payload: { code: 'BUDGET_WARNING', scope: 'install' } }], 'warned once at 30 of 20');
  t.match(await request(w.sock, 'chat:send', { session_id: sid, message: 'two' }), { ok: false, error: { code: 'BUDGET_EXCEEDED', message: /install budget \(per month: 30 of 20 tokens\)/ } });
  t.match((await (await app.api('/api/budgets')).json()).budgets, [{ scope: 'install', period: 'month', used_tokens: 30 }]);
});
