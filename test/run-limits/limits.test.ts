import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import type { TestApp } from '../helpers/app.js';
import { quietFor } from '../helpers/wait.js';

// Ceilings on a run and the loop detector (docs/run-limits.md): each ends the run `completed` with
// its finish_reason and a system:notice; the session stays usable; a wait for an answer is not counted.

async function me(app: TestApp) {
  return (await app.service.users.findUser('admin'))!;
}

/** The system:notice payloads seen, without their seq. */
function notices(seen: { name: string; payload: Record<string, unknown> }[]) {
  return seen.filter((e) => e.name === 'system:notice').map(({ payload: { seq: _, ...p } }) => p);
}

async function metric(app: TestApp, limit: string): Promise<number | null> {
  const text = await (await app.api('/metrics', { key: app.adminKey })).text();
  const m = text.match(new RegExp(`^agentsvc_run_limits_total\\{limit="${limit}"\\} (\\d+)$`, 'm'));
  return m ? Number(m[1]) : null;
}

t.test('the tool-call ceiling: the call past it does not run, the run ends `limit`, the next chat completes', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RUN_MAX_TOOL_CALLS: '3' });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  let n = 0;
  // The model would call tools for ever, each time with other arguments (no loop).
  model.fallback = () => ({ toolCalls: [{ name: 'Echo', args: { say: `n${++n}` } }] });
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'work' }), { ok: true });
  await untilEnd(seen, sid);
  t.same(ran, ['n1', 'n2', 'n3'], 'three calls ran; the fourth was refused');
  t.equal(model.requests.length, 4, 'no model call after the fourth tool call');
  t.same(notices(seen), [
    { session_id: sid, code: 'RUN_LIMIT', message: 'The run was ended: 4 tool calls, past its 3 (AGENTSVC_RUN_MAX_TOOL_CALLS).', limit: 'tool_calls', max: 3, value: 4 },
  ]);
  t.match(seen.at(-1), { name: 'chat:end', payload: { session_id: sid, status: 'completed', finish_reason: 'limit' } });
  const turns = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const calls = turns.flatMap((x: { tool_calls: { status: string; result: string }[] }) => x.tool_calls);
  t.same(
    calls.map((c: { status: string }) => c.status),
    ['done', 'done', 'done', 'error'],
    'the refused call has an error result',
  );
  t.match(calls[3].result, /reached its limit \(4 tool calls, past its 3/);
  t.equal(await metric(app, 'tool_calls'), 1, 'counted once');

  model.fallback = { text: ['fine'] };
  seen.length = 0;
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'again' }), { ok: true });
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'stop' } }, 'the session is usable');
  t.equal(seen.filter((e) => e.name === 'system:notice').length, 0);
});

t.test('the wall clock ends a run past it at its next step', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RUN_MAX_SECONDS: '1' });
  // A tool that takes longer than the whole run may (its work, not a wait of the test).
  app.service.tools.register({
    name: 'Slow',
    description: 'slow',
    provider: 'builtin' as const,
    parameters: { type: 'object', properties: {} },
    execute: () => new Promise<string>((r) => setTimeout(() => r('slept'), 1300)),
  });
  model.script({ toolCalls: [{ name: 'Slow', args: {} }] });
  model.fallback = { text: ['never asked'] };
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  const t0 = Date.now();
  await request(sock, 'chat:send', { session_id: sid, message: 'work' });
  await untilEnd(seen, sid);
  const took = (Date.now() - t0) / 1000;
  t.equal(model.requests.length, 1, 'the model is not called again');
  const told = notices(seen);
  t.equal(told.length, 1);
  const value = told[0].value as number;
  t.same(told[0], {
    session_id: sid,
    code: 'RUN_LIMIT',
    message: `The run was ended: it ran ${value} s, past its 1 s (AGENTSVC_RUN_MAX_SECONDS).`,
    limit: 'seconds',
    max: 1,
    value,
  });
  t.ok(Number.isInteger(value) && value >= 1 && value <= Math.ceil(took), `value ${value} s within the run's ${took} s`);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'limit' } });
  t.equal(await metric(app, 'seconds'), 1);
});

t.test('the wait for an answer does not count toward the wall clock', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RUN_MAX_SECONDS: '1' });
  const sid = await createSession(app);
  const admin = await me(app);
  const ask = {
    questions: [
      {
        question: 'Which?',
        header: 'Pick',
        multiSelect: false,
        options: [
          { label: 'A', description: 'a' },
          { label: 'B', description: 'b' },
        ],
      },
    ],
  };
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: ask }] }, { text: ['done'] });
  const first = await app.service.runs.start(admin.id, { session_id: sid, message: 'go' }, 'chat');
  t.match(await first.ended, { status: 'completed', finish_reason: 'tool_question' });
  // Nobody answers for longer than the whole run may take (the wall clock must pass: no event to wait for).
  await quietFor(1500, 'the waiting question expiring with the run time limit');

  const turns = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const call = turns.flatMap((x: { tool_calls: { id: string; status: string }[] }) => x.tool_calls).find((c: { status: string }) => c.status === 'awaiting_answer');
  const { seen } = await watch(app, sid);
  const answer = await app.service.runs.start(admin.id, { session_id: sid, message: '', askuser_answer: { tool_call_id: call.id, selections: { 0: [1] } } }, 'chat');
  t.match(await answer.ended, { status: 'completed', finish_reason: 'stop' }, 'the answered run finishes');
  await untilEnd(seen, sid);
  t.equal(seen.filter((e) => e.name === 'system:notice').length, 0, 'no RUN_LIMIT');
  t.equal(model.requests.length, 2);
  t.equal(await metric(app, 'seconds'), null, 'never counted');
});

t.test('the loop detector: the same call with the same result five times ends the run `loop`', async (t) => {
  const { app, model } = await buildWithModel(t);
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  model.fallback = { toolCalls: [{ name: 'Echo', args: { say: 'again' } }] };
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'work' });
  await untilEnd(seen, sid);
  t.equal(ran.length, 5, 'five identical calls ran');
  t.equal(model.requests.length, 5, 'no sixth model call');
  t.same(notices(seen), [
    { session_id: sid, code: 'LOOP_DETECTED', message: 'The run was ended: Echo was called 5 times in a row with the same arguments and the same result.', tool_name: 'Echo' },
  ]);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'loop' } });
  t.equal(await metric(app, 'loop'), 1);

  model.fallback = { text: ['fine'] };
  seen.length = 0;
  await request(sock, 'chat:send', { session_id: sid, message: 'again' });
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'stop' } }, 'the session is usable');
});

t.test('the same call with other results each time is no loop; arguments in another order are the same call', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_LOOP_REPEATS: '3' });
  let ticks = 0;
  app.service.tools.register({
    name: 'Tick',
    description: 'a counter',
    provider: 'builtin' as const,
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    execute: async () => `tick ${++ticks}`,
  });
  let calls = 0;
  model.fallback = () => (++calls <= 7 ? { toolCalls: [{ name: 'Tick', args: { a: 1, b: 2 } }] } : { text: ['done'] });
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'count' });
  await untilEnd(seen, sid);
  t.equal(ticks, 7, 'seven calls, seven results');
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'stop' } });
  t.equal(seen.filter((e) => e.name === 'system:notice').length, 0);

  // Same result, arguments reordered: the third in a row ends it (AGENTSVC_LOOP_REPEATS=3).
  const orders = [{ a: 1, b: 2 }, { b: 2, a: 1 }, '{"b":2,"a":1}'];
  let i = 0;
  model.fallback = () => ({ toolCalls: [{ name: 'Echo', args: orders[i++ % 3] }] });
  const ran: string[] = [];
  app.service.tools.register({ ...echoTool(ran), parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } });
  seen.length = 0;
  await request(sock, 'chat:send', { session_id: sid, message: 'echo' });
  await untilEnd(seen, sid);
  t.equal(ran.length, 3);
  t.match(
    seen.filter((e) => e.name === 'system:notice').map((e) => e.payload),
    [{ code: 'LOOP_DETECTED', tool_name: 'Echo' }],
  );
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'loop' } });
});
