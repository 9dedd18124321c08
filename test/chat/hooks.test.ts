import t from 'tap';
import { chatFixture, untilEnd, echoTool } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import type { HookEvents } from '../../src/core/engine/hooks.js';
import { waitFor } from '../helpers/wait.js';

// The run engine's seams (src/core/engine/hooks.ts): what policy, budgets, usage and metrics plug into.


t.test('events: a run tells run.started, model.call, tool.call and run.ended, in order', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  const told: { name: string; payload: HookEvents[keyof HookEvents] }[] = [];
  for (const name of ['run.started', 'model.call', 'tool.call', 'run.ended'] as const) app.service.hooks.on(name, (payload) => void told.push({ name, payload }));
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'hi' } }] }, { text: ['done'], usage: { prompt_tokens: 11, completion_tokens: 3 } });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  await waitFor(() => told.length >= 5, { what: 'five hook events' });
  t.same(told.map((x) => x.name), ['run.started', 'model.call', 'tool.call', 'model.call', 'run.ended']);
  const started = told[0].payload as HookEvents['run.started'];
  t.match(started.run, { sessionId: sid, origin: 'chat', unattended: false });
  t.match(started.run.runId, /^run_/);
  const second = told[3].payload as HookEvents['model.call'];
  t.match(second, { outcome: 'ok', loopId: 'root', usage: { input_tokens: 11, output_tokens: 3 } });
  t.ok(second.ttftMs !== null && second.ttftMs >= 0 && second.ttftMs <= second.durationMs, 'time to first delta within the call');
  t.match(told[2].payload, { tool: 'Echo', status: 'done' });
  t.match(told[4].payload, { status: 'completed', finish_reason: 'stop' });
  t.equal((told[4].payload as HookEvents['run.ended']).run.runId, started.run.runId, 'one run id throughout');
});

t.test('tool.before: deny gives the call an error result and the run goes on', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  app.service.hooks.gate('tool.before', ({ args }) => (args.say === 'secret' ? { action: 'deny', message: 'denied by policy: Echo secret (install)' } : undefined));
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'secret' } }, { name: 'Echo', args: { say: 'fine' } }] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  t.same(runs, ['fine'], 'only the allowed call ran');
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.match(msgs[1].tool_calls, [
    { status: 'error', result: 'denied by policy: Echo secret (install)' },
    { status: 'done', result: 'said fine' },
  ]);
  t.match(seen.at(-1)?.payload, { status: 'completed', finish_reason: 'stop' });
});

t.test('tool.before: ask pauses the call with an approval as its pending_question_ref', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  app.service.hooks.gate('tool.before', () => ({ action: 'ask', question: { tool_name: 'Echo', rule: { tool: 'Echo', action: 'ask' }, source: 'install' } }));
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'x' } }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  t.same(runs, [], 'nothing ran');
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const call = msgs[1].tool_calls[0];
  t.match(call, { status: 'awaiting_answer', pending_question_ref: { type: 'approval', tool_call_id: call.id, tool_name: 'Echo', source: 'install' } });
  t.equal(msgs[1].status, 'paused');
  const session = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(session.status, 'waiting_for_input');
});

t.test('model.before: a stop ends the run completed with the gate finish_reason, before the call', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  app.service.hooks.gate('model.before', () => ({ action: 'stop', code: 'BUDGET_EXCEEDED', message: 'the user budget is spent', finish_reason: 'budget' }));
  model.script({ text: ['never sent'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  t.equal(model.requests.length, 0, 'the model was not called');
  t.match(seen.find((e) => e.name === 'system:error')?.payload, { code: 'BUDGET_EXCEEDED', message: 'the user budget is spent' });
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'budget' } });
  const session = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(session.status, 'completed');
});

t.test('a listener that throws is logged and the run goes on', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  app.service.hooks.on('model.call', () => {
    throw new Error('listener bug');
  });
  model.script({ text: ['fine'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  t.match(seen.at(-1)?.payload, { status: 'completed', finish_reason: 'stop' });
});

t.test('session.deleted and session.unshared reach their listeners', async (t) => {
  const { app, sid } = await chatFixture(t);
  const told: string[] = [];
  app.service.hooks.on('session.unshared', ({ sessionId }) => void told.push(`unshared ${sessionId}`));
  app.service.hooks.on('session.deleted', ({ sessionId }) => void told.push(`deleted ${sessionId}`));
  t.equal((await app.api(`/api/sessions/${sid}/sharing`, { method: 'PATCH', json: { shared: true } })).status, 200);
  t.equal((await app.api(`/api/sessions/${sid}/sharing`, { method: 'PATCH', json: { shared: false } })).status, 200);
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.same(told, [`unshared ${sid}`, `deleted ${sid}`]);
});
