import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';

t.test('planning mode, headless output, structured output, images', async (t) => {
  const { app, model } = await buildWithModel(t);
  app.service.tools.register({ name: 'Echo', description: 'echo', provider: 'builtin', parameters: { type: 'object' }, execute: async () => 'x' });
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  const run = async (sid: string, payload: object) => {
    const ends = seen.filter((e) => e.name === 'chat:end' && e.payload.session_id === sid).length;
    const ack = await request(sock, 'chat:send', { session_id: sid, ...payload });
    if (!ack.ok) throw new Error(JSON.stringify(ack));
    await untilEnd(seen, sid, 20_000, ends + 1);
    return seen.filter((e) => e.payload.session_id === sid && e.name === 'chat:end').at(-1)!.payload;
  };

  t.test('planning: no tools offered, plan prompt, per-send override', async (t) => {
    const planned = await createSession(app, app.adminKey, { mode: 'planning' });
    await subscribe(sock, planned);
    model.script({ text: ['1. do it'] });
    await run(planned, { message: 'plan it' });
    const req = model.requests.at(-1);
    t.notOk(req.tools, 'no tools in planning mode');
    t.match(req.messages[0].content, /planning mode/);
    t.equal(seen.find((e) => e.name === 'chat:start' && e.payload.session_id === planned)!.payload.mode, 'planning');
    model.script({ text: ['ran'] });
    await run(planned, { message: 'now do it', mode: 'executing' });
    t.ok(model.requests.at(-1).tools.length > 0, 'executing override offers tools');
  });

  t.test('disable_tools removes tools by name and provider', async (t) => {
    const sid = await createSession(app, app.adminKey, { disable_tools: ['builtin'] });
    await subscribe(sock, sid);
    model.script({ text: ['x'] });
    await run(sid, { message: 'hi' });
    t.notOk(model.requests.at(-1).tools?.some((x: any) => x.function.name === 'Echo'));
  });

  t.test('headless text', async (t) => {
    const sid = await createSession(app);
    await subscribe(sock, sid);
    model.script({ text: ['forty', '-two'] });
    const end = await run(sid, { message: 'answer', headless: true });
    t.same(end.result, { output: 'forty-two' });
    t.equal(end.status, 'completed');
  });

  t.test('headless with output_schema: response_format, validated object; one repair; failure', async (t) => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
    const sid = await createSession(app);
    await subscribe(sock, sid);
    model.script({ text: ['{"n": ', '42}'] });
    const end = await run(sid, { message: 'number', headless: true, output_schema: schema });
    t.same(end.result, { output: { n: 42 }, schema });
    t.match(model.requests.at(-1).response_format, { type: 'json_schema', json_schema: { schema } });

    model.script({ text: ['{"n": "x"}'] }, { text: ['{"n": 7}'] });
    const repaired = await run(sid, { message: 'number', headless: true, output_schema: schema });
    t.same(repaired.result, { output: { n: 7 }, schema });
    t.match(model.requests.at(-1).messages.at(-1).content, /does not match the required JSON Schema/);

    model.script({ text: ['nope'] }, { text: ['still nope'] });
    const failed = await run(sid, { message: 'number', headless: true, output_schema: schema });
    t.equal(failed.status, 'failed');
    const err = seen.filter((e) => e.name === 'system:error' && e.payload.session_id === sid).at(-1)!;
    t.equal(err.payload.code, 'OUTPUT_SCHEMA_INVALID');
    t.match(err.payload.message, /output_schema/);
  });

  t.test('content parts with a data URL image reach the model', async (t) => {
    const sid = await createSession(app);
    await subscribe(sock, sid);
    const url = 'data:image/png;base64,iVBORw0KGgo=';
    model.script({ text: ['a picture'] });
    await run(sid, { message: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url } }] });
    t.same(model.requests.at(-1).messages.at(-1), { role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url } }] });
    const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    t.same(msgs[0].blocks.map((b: any) => b.type), ['text', 'image']);
  });

  t.test('bound on model calls per run ends with max_turns', async (t) => {
    const sid = await createSession(app);
    await subscribe(sock, sid);
    // Each call differs, so the loop detector (docs/run-limits.md) leaves the run to this bound.
    let n = 0;
    model.fallback = () => ({ toolCalls: [{ name: 'Echo', args: { n: n++ } }] });
    t.teardown(() => void (model.fallback = { text: ['ok'] }));
    const end = await run(sid, { message: 'loop forever' });
    t.equal(end.finish_reason, 'max_turns');
    const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    t.equal(msgs.filter((m: any) => m.role === 'assistant').length, app.config.model.maxCallsPerRun);
  });

  t.test('history and context-stats count tokens with a real tokenizer', async (t) => {
    const sid = await createSession(app);
    await subscribe(sock, sid);
    model.script({ text: ['hello world'] });
    await run(sid, { message: 'count me' });
    const h = await (await app.api(`/api/sessions/${sid}/history`)).json();
    t.equal(h.tokenizer_model, 'o200k_base');
    t.ok(h.system_prompt_tokens > 20);
    t.ok(h.tools_tokens > 0);
    t.same(h.nodes.map((n: any) => [n.role, n.tokens]), [['user', 2], ['assistant', 2]]);
    const c = await (await app.api(`/api/sessions/${sid}/context-stats`)).json();
    t.equal(c.total_tokens, c.system_prompt_tokens + c.tools_tokens + c.messages_tokens);
    t.equal(c.messages_tokens, 10, 'what the model sees: 2 + 2 tokens of text, 3 of framing per message');
    t.equal(c.context_window, app.config.model.contextWindow);
  });
});

t.test('runs no live process owns are closed by a live process (heartbeat recovery)', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_MAX_MODEL_CALLS: '3' });
  const sid = await createSession(app);
  const conn = app.service.db.em().getConnection();
  // A crashed process left this behind: a running session, a streaming turn with a pending tool call.
  await conn.execute(`update sessions set status = 'running', run_owner = 'inst_dead' where id = ?`, [sid]);
  await conn.execute(
    `insert into turns (id, session_id, sequence, turn_id, role, status, model) values ('entry_x', ?, 0, 'turn_x', 'assistant', 'streaming', 'fake-model')`,
    [sid],
  );
  const ev = (seq: number, payload: object) => conn.execute(`insert into session_events (session_id, seq, name, payload) values (?, ?, 'turn:patch', ?::jsonb)`, [sid, seq, JSON.stringify({ session_id: sid, seq, turn_id: 'turn_x', ...payload })]);
  await ev(1, { patch_type: 'add_content', data: { text_delta: 'half an ans' } });
  await ev(2, { patch_type: 'add_tool_call', data: { id: 'tc_x', tool_name: 'Bash', display_name: 'Bash', arguments: '{}', status: 'pending' } });
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  t.same(await app.service.executor.recover(), [sid]);
  await untilEnd(seen, sid);
  t.same(seen.map((e) => [e.name, e.payload.seq]), [['turn:patch', 3], ['turn:end', 4], ['chat:end', 5]]);
  const detail = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(detail.status, 'interrupted');
  const [turn] = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(turn.status, 'interrupted');
  t.equal(turn.blocks[0].content, 'half an ans');
  t.match(turn.tool_calls[0], { id: 'tc_x', status: 'cancelled' });
  t.same(await app.service.executor.recover(), [], 'idempotent');
});

t.test('runs no live process owns are closed when the service starts', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  const conn = app.service.db.em().getConnection();
  // As a process killed mid-run leaves it; then the service restarts.
  await conn.execute(`update sessions set status = 'running', run_owner = 'inst_dead' where id = ?`, [sid]);
  await conn.execute(`insert into turns (id, session_id, sequence, turn_id, role, status) values ('entry_y', ?, 0, 'turn_y', 'assistant', 'streaming')`, [sid]);
  await app.restart();
  const detail = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(detail.status, 'interrupted', 'closed by the new process before it served anything');
  const [turn] = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(turn.status, 'interrupted');
});

t.test("a failed run's turn its process could not close (a full disk, then a restart) is closed at start", async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  const conn = app.service.db.em().getConnection();
  // The run failed and was released, but its turn's closing write never reached the disk: the
  // in-memory retry went with the process.
  await conn.execute(`update sessions set status = 'failed' where id = ?`, [sid]);
  const call = { id: 'tc_z', tool_name: 'Bash', display_name: 'Bash', arguments: '{}', status: 'pending', result: null, duration_ms: 0, pending_question_ref: null };
  await conn.execute(
    `insert into turns (id, session_id, sequence, turn_id, role, status, tool_calls) values ('entry_z', ?, 0, 'turn_z', 'assistant', 'streaming', ?::jsonb)`,
    [sid, JSON.stringify([call])],
  );
  await app.restart();
  const [turn] = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(turn.status, 'failed', 'closed as its run ended');
  t.match(turn.tool_calls, [{ id: 'tc_z', status: 'cancelled', result: /the run failed/ }], 'its open tool call cancelled');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'failed', 'the session keeps its status');
});

t.test('a session left running by this very process (a lost claim) is closed by chat:stop and by recovery', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  const conn = app.service.db.em().getConnection();
  await conn.execute(`update sessions set status = 'running', run_owner = ? where id = ?`, [app.service.executor.instanceId, sid]);
  const sock = app.socket();
  await next(sock, 'connect');
  const ack = await request(sock, 'chat:stop', { session_id: sid });
  t.same(ack, { ok: true, stopped: true, status: 'interrupted' }, 'chat:stop reports what it did');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');
  const again = await request(sock, 'chat:stop', { session_id: sid });
  t.same(again, { ok: true, stopped: false, status: 'interrupted' }, 'nothing to stop: says so');
});
