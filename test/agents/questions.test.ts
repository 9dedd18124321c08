import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd, type Recorded } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

const QUESTIONS = {
  questions: [
    { question: 'Which color?', header: 'Color', options: [{ label: 'red' }, { label: 'blue', description: 'calm' }] },
    { question: 'Which sizes?', options: [{ label: 'S' }, { label: 'M' }, { label: 'L' }], multiSelect: true },
  ],
};

async function connected(app: Awaited<ReturnType<typeof buildWithModel>>['app'], sid: string) {
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  return { sock, seen };
}

const ends = (seen: Recorded[], sid: string) => seen.filter((e) => e.name === 'chat:end' && e.payload.session_id === sid).length;

t.test('a question pauses the run durably and is answered after a server restart', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  let { sock, seen } = await connected(app, sid);
  model.script({ text: ['Let me ask.'], toolCalls: [{ name: 'AskUserQuestion', args: QUESTIONS }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'pick for me' });
  await untilEnd(seen, sid);
  const names = seen.map((e) => (e.name === 'turn:patch' ? e.payload.patch_type : e.name));
  t.same(names.slice(-3), ['add_tool_call', 'turn:end', 'chat:end'], 'question, paused turn, chat:end');
  const add = seen.find((e) => e.payload.patch_type === 'add_tool_call')!.payload.data;
  t.equal(add.status, 'awaiting_answer');
  t.same(JSON.parse(add.arguments), QUESTIONS);
  const turnEnd = seen.filter((e) => e.name === 'turn:end').at(-1)!;
  t.equal(turnEnd.payload.status, 'paused');
  t.match(seen.at(-1)!.payload, { status: 'completed', finish_reason: 'tool_question' });
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'waiting_for_input');
  t.equal(seen.filter((e) => e.name === 'turn:patch' && e.payload.patch_type === 'tool_result').length, 0, 'no result before the answer');

  await app.restart();
  ({ sock, seen } = await connected(app, sid));
  const lastSeq = (await (await app.api(`/api/sessions/${sid}/messages`)).json()).length;
  t.ok(lastSeq > 0);

  // Bad answers change nothing.
  const bad: [object, string][] = [
    [{ tool_call_id: 'tc_nope', selections: { 0: [0], 1: [0] } }, 'NO_PENDING_QUESTION'],
    [{ tool_call_id: add.id, selections: { 0: [0] } }, 'VALIDATION_ERROR'],
    [{ tool_call_id: add.id, selections: { 0: [5], 1: [0] } }, 'VALIDATION_ERROR'],
    [{ tool_call_id: add.id, selections: { 0: [0, 1], 1: [0] } }, 'VALIDATION_ERROR'],
    [{ tool_call_id: add.id, selections: { 0: [0], 1: [0], 7: [0] } }, 'VALIDATION_ERROR'],
    [{ tool_call_id: add.id, selections: { 0: [-1], 1: [0] } }, 'VALIDATION_ERROR'],
  ];
  for (const [answer, code] of bad) {
    const ack = await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: answer });
    t.equal(ack.ok, false, JSON.stringify(answer));
    t.equal(ack.error.code, code, JSON.stringify(answer));
  }
  t.same(seen, [], 'no events from bad answers');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'waiting_for_input');

  model.script({ text: ['Blue, S and L.'] });
  const ack = await request(sock, 'chat:send', {
    session_id: sid,
    message: '',
    askuser_answer: { tool_call_id: add.id, selections: { 0: [1], 1: [0, 2] }, custom: { 1: 'and XL if any' } },
  });
  t.same(ack, { ok: true, turn_id: null });
  await untilEnd(seen, sid);
  const shape = seen.map((e) => (e.name === 'turn:patch' ? `patch:${e.payload.patch_type}` : e.name));
  t.same(shape.slice(0, 4), ['chat:start', 'patch:tool_result', 'turn:end', 'turn:start']);
  t.equal(seen[1].payload.turn_id, turnEnd.payload.turn_id, 'the result lands on the paused turn');
  t.match(seen[2].payload, { turn_id: turnEnd.payload.turn_id, status: 'completed', turn: { status: 'completed' } }, 'which ends again, completed');
  t.match(seen[1].payload.data, { tool_call_id: add.id, status: 'done' });
  t.match(seen.at(-1)!.payload, { status: 'completed', finish_reason: 'stop' });
  const toolMsg = model.requests.at(-1).messages.find((m: any) => m.role === 'tool' && m.tool_call_id === add.id);
  t.match(toolMsg.content, /"blue"/);
  t.match(toolMsg.content, /"S", "L"/);
  t.match(toolMsg.content, /and XL if any/);
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const paused = msgs.find((m: any) => m.turn_id === turnEnd.payload.turn_id);
  t.equal(paused.status, 'completed');
  t.match(paused.tool_calls[0], { status: 'done' });
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'completed');
  const again = await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: add.id, selections: { 0: [0], 1: [0] } } });
  t.equal(again.error.code, 'NO_PENDING_QUESTION', 'a question is answered once');
});

/** Root: two parallel Agent calls, then a final answer. Sub-agents: streamed text, or a question. */
function router(body: any) {
  const sys = body.messages[0].content as string;
  const last = body.messages.at(-1);
  if (sys.startsWith('You are a sub-agent')) {
    const prompt = body.messages[1].content as string;
    if (prompt === 'hang') return { hang: true };
    if (prompt === 'gamma' && last.role !== 'tool')
      return { toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Proceed?', options: [{ label: 'yes' }, { label: 'no' }] }] } }] };
    return { text: [`${prompt}-1 `, `${prompt}-2 `, `${prompt}-3`], delayMs: 25 };
  }
  if (last.role === 'tool') return { text: ['all done'] };
  const user = body.messages.filter((m: any) => m.role === 'user').at(-1).content;
  const agents = user === 'ask inside' ? ['gamma'] : user === 'hang' ? ['hang', 'hang'] : ['alpha', 'beta'];
  return { toolCalls: agents.map((p) => ({ name: 'Agent', args: { description: `do ${p}`, prompt: p } })) };
}

t.test('parallel sub-agents interleave on the stream and nest under their fork calls', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script(...Array.from({ length: 10 }, () => router));
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'fan out' });
  await untilEnd(seen, sid);
  const forks = seen.filter((e) => e.payload.patch_type === 'add_tool_call').map((e) => e.payload.data);
  t.same(
    forks.map((f) => f.tool_name),
    ['Agent', 'Agent'],
  );
  const starts = seen.filter((e) => e.name === 'turn:start');
  const subTurns = new Map(starts.filter((e) => e.payload.parent_fork_tool_call_id).map((e) => [e.payload.turn_id, e.payload.parent_fork_tool_call_id]));
  t.same(new Set(subTurns.values()), new Set(forks.map((f) => f.id)), 'each fork call owns sub-agent turns');
  // Nesting: every sub-agent event lies between its fork call's add_tool_call and tool_result.
  for (const f of forks) {
    const open = seen.findIndex((e) => e.payload.patch_type === 'add_tool_call' && e.payload.data.id === f.id);
    const close = seen.findIndex((e) => e.payload.patch_type === 'tool_result' && e.payload.data.tool_call_id === f.id);
    const inner = seen.map((e, i) => [e, i] as const).filter(([e]) => subTurns.get(e.payload.turn_id) === f.id);
    t.ok(inner.length >= 5, 'sub-agent turn events');
    t.ok(
      inner.every(([, i]) => i > open && i < close),
      `nested inside ${f.id}`,
    );
    const result = seen[close].payload.data;
    t.match(result.result, /-1 .*-2 .*-3/);
  }
  // Interleaving: the two sub-agents' text patches alternate rather than run one after the other.
  const order = seen.filter((e) => e.payload.patch_type === 'add_content' && subTurns.has(e.payload.turn_id)).map((e) => subTurns.get(e.payload.turn_id));
  const switches = order.filter((x, i) => i > 0 && x !== order[i - 1]).length;
  t.ok(switches >= 2, `streams interleave (${switches} switches)`);
  t.same(
    seen.map((e) => e.payload.seq),
    seen.map((_, i) => i + 1),
  );

  const all = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const main = all.filter((m: any) => m.parent_fork_tool_call_id === null);
  t.same(
    main.map((m: any) => m.role),
    ['user', 'assistant', 'assistant'],
    'main chat view',
  );
  t.same(main.map((m: any) => m.loop_id), ['root', 'root', 'root']);
  const subs = all.filter((m: any) => m.parent_fork_tool_call_id !== null);
  t.equal(subs.length, 2);
  t.equal(new Set(subs.map((m: any) => m.loop_id)).size, 2, 'each sub-agent has its own loop_id');
  t.ok(subs.every((m: any) => m.loop_id.startsWith('loop_')));
  t.same(
    all.map((m: any) => m.sequence),
    all.map((_: any, i: number) => i),
    'one sequence across loops',
  );
});

t.test("a sub-agent's question pauses the parent and its answer resumes the sub-agent", async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script(...Array.from({ length: 10 }, () => router));
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'ask inside' });
  await untilEnd(seen, sid);
  const calls = seen.filter((e) => e.payload.patch_type === 'add_tool_call').map((e) => e.payload.data);
  const [fork, q] = calls;
  t.equal(fork.tool_name, 'Agent');
  t.equal(q.tool_name, 'AskUserQuestion');
  t.equal(q.status, 'awaiting_answer');
  t.match(JSON.parse(q.arguments).source_loop, { parent_fork_tool_call_id: fork.id, depth: 1 });
  const turnEnds = seen.filter((e) => e.name === 'turn:end').map((e) => e.payload);
  t.same(
    turnEnds.slice(-2).map((e) => e.status),
    ['paused', 'paused'],
    'sub-agent turn and parent turn pause',
  );
  t.match(turnEnds.at(-1).turn.tool_calls[0], { id: fork.id, status: 'pending' });
  t.match(seen.at(-1)!.payload, { finish_reason: 'tool_question' });

  const before = ends(seen, sid);
  await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: q.id, selections: { 0: [0] } } });
  await untilEnd(seen, sid, 20_000, before + 1);
  const after = seen.slice(seen.findLastIndex((e) => e.name === 'chat:start'));
  const forkResult = after.find((e) => e.payload.patch_type === 'tool_result' && e.payload.data.tool_call_id === fork.id)!;
  t.match(forkResult.payload.data.result, /gamma-1 gamma-2 gamma-3/);
  t.match(after.at(-1)!.payload, { status: 'completed', finish_reason: 'stop' });
  const all = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.same([...new Set(all.flatMap((m: any) => m.tool_calls.map((c: any) => c.status)))], ['done'], 'every call done');
  t.same([...new Set(all.map((m: any) => m.status))], ['completed']);
  t.equal(all.at(-1).parent_fork_tool_call_id, null);
  t.equal(all.at(-1).blocks[0].content, 'all done');
});

t.test('depth bound, tasks, stop during sub-agents', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MAX_FORK_DEPTH: '0' });
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  model.script(
    {
      toolCalls: [
        { name: 'Agent', args: { description: 'x', prompt: 'x' } },
        { name: 'TaskCreate', args: { subject: 'write tests', description: 'all of them' } },
        { name: 'TaskCreate', args: { subject: 'ship', description: '' } },
      ],
    },
    {
      toolCalls: [
        { name: 'TaskUpdate', args: { taskId: '1', status: 'completed' } },
        { name: 'TaskUpdate', args: { taskId: '9', status: 'completed' } },
        { name: 'TaskList', args: {} },
      ],
    },
    { text: ['ok'] },
  );
  await request(sock, 'chat:send', { session_id: sid, message: 'plan' });
  await untilEnd(seen, sid);
  const results = seen.filter((e) => e.payload.patch_type === 'tool_result').map((e) => e.payload.data);
  t.match(results[0], { status: 'error', result: /nest at most 0 deep/ });
  t.match(results[1].result, /Created task #1/);
  t.match(results[4], { status: 'error', result: /no task #9/ });
  t.equal(results[5].result, '#1 [completed] write tests\n#2 [pending] ship');
  const tasks = await (await app.api(`/api/sessions/${sid}/tasks`)).json();
  t.same(
    tasks.map((x: any) => [x.id, x.subject, x.status]),
    [
      ['1', 'write tests', 'completed'],
      ['2', 'ship', 'pending'],
    ],
  );
  const bob = await app.newUser();
  t.equal((await app.api(`/api/sessions/${sid}/tasks`, { key: bob.key })).status, 404);
});

t.test('chat:stop stops sub-agents too', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script(...Array.from({ length: 10 }, () => router));
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'hang' });
  await waitFor(() => seen.filter((e) => e.name === 'turn:start' && e.payload.parent_fork_tool_call_id).length >= 2, { what: 'both sub-agents started' });

  const t0 = Date.now();
  await request(sock, 'chat:stop', { session_id: sid });
  await untilEnd(seen, sid);
  t.ok(Date.now() - t0 < 2000, 'within 2 s');
  t.match(seen.at(-1)!.payload, { status: 'interrupted', finish_reason: 'interrupted' });
  const all = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.same(
    all.map((m: any) => m.status),
    ['completed', 'interrupted', 'interrupted', 'interrupted'],
  );
  t.ok(
    all[1].tool_calls.every((c: any) => c.status === 'cancelled' && /cancelled/.test(c.result)),
    'fork calls cancelled',
  );
});
