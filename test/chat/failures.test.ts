import t from 'tap';
import { buildWithModel, chatFixture, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

t.test('model failures: system:error, failed turn, failed session, next chat works', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_TIMEOUT_MS: '1500', AGENTSVC_MODEL_RETRIES: '1' });
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);

  const cases: [string, object, string][] = [
    ['http 500', { status: 500 }, 'MODEL_ERROR'],
    ['http 400', { status: 400 }, 'MODEL_ERROR'],
    ['broken stream', { text: ['a', 'b', 'c'], breakAfter: 2 }, 'MODEL_STREAM_BROKEN'],
    ['silent model', { hang: true }, 'MODEL_TIMEOUT'],
  ];
  let ends = 0;
  for (const [name, reply, code] of cases) {
    // A 5xx (and a stream cut before its first delta) is retried once here: script both attempts.
    model.script(reply, reply);
    const from = seen.length;
    const ack = await request(sock, 'chat:send', { session_id: sid, message: name });
    t.equal(ack.ok, true, name);
    await untilEnd(seen, sid, 20_000, ++ends);
    const run = seen.slice(from);
    const err = run.find((e) => e.name === 'system:error');
    t.equal(err?.payload.code, code, `${name}: system:error with its code`);
    t.type(err?.payload.seq, 'number');
    const turnEnd = run.filter((e) => e.name === 'turn:end').at(-1)!;
    t.equal(turnEnd.payload.status, 'failed', `${name}: turn failed`);
    t.match(run.at(-1), { name: 'chat:end', payload: { status: 'failed', finish_reason: 'error' } });
    t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'failed', `${name}: session failed`);
    const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    for (const m of msgs) for (const c of m.tool_calls) t.ok(c.result !== null, 'every tool call has a result');
    model.clear();
  }
  // The failed session accepts the next chat.
  model.script({ text: ['fine'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'ok now?' });
  await untilEnd(seen, sid, 20_000, ++ends);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
});

t.test('tool-call arguments that are not valid JSON: a tool error the model sees, the run goes on', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  let ran = 0;
  app.service.tools.register({
    name: 'Echo',
    description: 'echo',
    provider: 'builtin',
    parameters: { type: 'object', properties: { text: { type: 'string' } } },
    execute: async (args: any) => {
      ran++;
      return `echoed ${args.text}`;
    },
  });
  model.script(
    { toolCalls: [{ name: 'Echo', args: '{"text": "unterminated' }, { name: 'Echo', args: '[1, 2]' }] },
    { toolCalls: [{ name: 'Echo', args: { text: 'fixed' } }] },
    { text: ['all ', 'done'] },
  );
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'echo please' })).ok, true);
  await untilEnd(seen, sid);
  t.notOk(seen.some((e) => e.name === 'system:error'), 'no system:error');
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'stop' } });
  t.equal(ran, 1, 'only the well-formed call ran');
  const results = seen.filter((e) => e.payload.patch_type === 'tool_result').map((e) => e.payload.data);
  t.match(results, [
    { status: 'error', result: /not a valid JSON object.*"text": "unterminated/s },
    { status: 'error', result: /must be a JSON object/ },
    { status: 'done', result: 'echoed fixed' },
  ]);
  // The model's next call sees both errors as tool results of its own calls, sent as valid JSON.
  const second = model.requests[1].messages;
  const assistant = second.find((m: any) => m.role === 'assistant' && m.tool_calls);
  t.same(assistant.tool_calls.map((c: any) => c.function.arguments), ['{}', '{}'], 'unparseable arguments are not sent back as arguments');
  const toolMsgs = second.filter((m: any) => m.role === 'tool');
  t.equal(toolMsgs.length, 2);
  t.match(toolMsgs[0].content, /not a valid JSON object/);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'completed');
});

t.test('storage full mid-run: the run fails cleanly, system:error says so in plain words, turns closed', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const turns = app.service.turns;
  const update = turns.update.bind(turns);
  let fail: Error | null = null;
  turns.update = async (turn) => {
    const e = fail;
    fail = null;
    if (e && turn.role === 'assistant') throw e;
    return update(turn);
  };
  let ends = 0;
  for (const [what, err, code] of [
    // As PostgreSQL reports a full disk: its message names files; it must not reach clients.
    ['disk full', Object.assign(new Error('could not extend file "base/16384/2619": No space left on device'), { code: '53100' }), 'INSUFFICIENT_STORAGE'],
    ['internal', new Error('insert into turns (id, session_id) values ($1, $2) - relation "turns" is broken'), 'RUN_FAILED'],
  ] as const) {
    fail = err;
    model.script({ text: ['will ', 'not be stored'] });
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: what })).ok, true);
    await untilEnd(seen, sid, 20_000, ++ends);
    const error = seen.filter((e) => e.name === 'system:error').at(-1)!.payload;
    t.equal(error.code, code, `${what}: code`);
    t.notMatch(error.message, /base\/|insert|relation|\$1/, `${what}: no internals in "${error.message}"`);
    t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'failed', finish_reason: 'error' } });
    const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    t.same(msgs.filter((m: any) => m.status === 'streaming'), [], `${what}: no turn left streaming`);
  }
  model.script({ text: ['space is back'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'again' })).ok, true);
  await untilEnd(seen, sid, 20_000, ++ends);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });

  // REST writes and chat:send acks while the disk is full: 507 / INSUFFICIENT_STORAGE, nothing changed.
  const full = () => Object.assign(new Error('could not extend file "base/16384/2619": No space left on device'), { code: '53100' });
  const db = app.service.db;
  const sql = db.sql.bind(db);
  db.sql = (async (q: string, p?: unknown[]) => {
    if (/^\s*insert into payload_annotations/i.test(q)) throw full();
    return sql(q, p);
  }) as typeof db.sql;
  const entry = (await (await app.api(`/api/sessions/${sid}/messages`)).json())[0].id;
  const res = await app.api(`/api/payloads/${entry}/annotations`, { method: 'POST', json: { label: 'x' } });
  t.equal(res.status, 507);
  t.same(await res.json(), { code: 'INSUFFICIENT_STORAGE', detail: 'storage is full: nothing was changed; retry once space is freed' });
  t.same((await (await app.api(`/api/payloads/${entry}/annotations`)).json()).items, [], 'nothing stored');
  // The start's one statement (claim, user turn, first events) cannot store its turn: nothing of it is kept.
  db.sql = (async (q: string, p?: unknown[]) => {
    if (/insert into turns/i.test(q)) throw full();
    return sql(q, p);
  }) as typeof db.sql;
  const count = (await (await app.api(`/api/sessions/${sid}/messages`)).json()).length;
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'full' }), { ok: false, error: { code: 'INSUFFICIENT_STORAGE' } });
  db.sql = sql;
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'completed', 'the session as it was');
  t.equal((await (await app.api(`/api/sessions/${sid}/messages`)).json()).length, count, 'no turn stored');
});

t.test('chat:stop interrupts within 2 s; one run per session', async (t) => {
  const { app, model } = await buildWithModel(t);
  let started!: () => void;
  const toolStarted = new Promise<void>((r) => (started = r));
  app.service.tools.register({
    name: 'Sleep',
    description: 'Wait.',
    provider: 'bash',
    parameters: { type: 'object', properties: {} },
    execute: (_args, ctx) =>
      new Promise((_, reject) => {
        started();
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      }),
  });
  model.script({ text: ['working'], toolCalls: [{ name: 'Sleep', args: {} }] });
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await toolStarted;
  const busy = await request(sock, 'chat:send', { session_id: sid, message: 'again' });
  t.same(busy.ok, false);
  t.equal(busy.error.code, 'SESSION_BUSY');
  const t0 = Date.now();
  const stop = await request(sock, 'chat:stop', { session_id: sid });
  t.same(stop, { ok: true, stopped: true, status: 'interrupted' });
  await untilEnd(seen, sid);
  t.ok(Date.now() - t0 < 2000, 'ended within 2 s');
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'interrupted', finish_reason: 'interrupted' } });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const last = msgs.at(-1);
  t.equal(last.status, 'interrupted');
  t.match(last.tool_calls[0], { tool_name: 'Sleep', status: 'cancelled' });
  t.match(last.tool_calls[0].result, /cancelled/);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');
  t.equal(seen.filter((e) => e.name === 'turn:start').length, 2, 'the busy send stored nothing');

  // Stop while the model is still streaming.
  model.script({ hang: true });
  const before = model.requests.length;
  await request(sock, 'chat:send', { session_id: sid, message: 'hang' });
  await waitFor(() => model.requests.length === before + 1, { what: 'the model call of the hanging run' });
  const t1 = Date.now();
  await request(sock, 'chat:stop', { session_id: sid });
  await untilEnd(seen, sid, 5000, 2);
  t.ok(Date.now() - t1 < 2000);
  t.equal((await (await app.api(`/api/sessions/${sid}/messages`)).json()).at(-1).status, 'interrupted');
});

t.test('bad chat:send input: error ack, nothing stored, socket stays usable', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  const bad: [unknown, string][] = [
    [{ message: 'no session' }, 'VALIDATION_ERROR'],
    [{ session_id: 'sess_nope', message: 'x' }, 'NOT_FOUND'],
    [{ session_id: sid, message: 42 }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: [{ type: 'video', url: 'x' }] }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: 'x', mode: 'yolo' }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: '' }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: 'x', output_schema: { type: 'object' } }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: '', askuser_answer: { tool_call_id: 'tc_x', selections: {} } }, 'NO_PENDING_QUESTION'],
    [{ session_id: sid, message: 'x', whatif: { from_step: 1 } }, 'VALIDATION_ERROR'],
    [{ session_id: sid, message: 'nul\u0000' }, 'VALIDATION_ERROR'],
    ['not an object', 'VALIDATION_ERROR'],
    [null, 'VALIDATION_ERROR'],
  ];
  for (const [payload, code] of bad) {
    const ack = await request(sock, 'chat:send', payload);
    t.equal(ack.ok, false, JSON.stringify(payload));
    t.equal(ack.error.code, code, JSON.stringify(payload));
    t.type(ack.error.message, 'string');
  }
  const big = await request(sock, 'chat:send', { session_id: sid, message: 'x'.repeat(app.config.limits.socketMessage + 10) }, 20_000);
  t.equal(big.error.code, 'PAYLOAD_TOO_LARGE');
  t.same(await (await app.api(`/api/sessions/${sid}/messages`)).json(), [], 'nothing stored');
  t.same(seen, [], 'no events');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'created');
  const ok = await request(sock, 'chat:send', { session_id: sid, message: 'hello' });
  t.equal(ok.ok, true, 'the socket still works');
  await untilEnd(seen, sid);
  // Events without an ack callback: the handler must not throw, and the socket keeps working.
  sock.emit('chat:send', { session_id: sid });
  sock.emit('chat:stop', 'nonsense');
  sock.emit('session:subscribe');
  t.equal((await request(sock, 'session:subscribe', { session_id: sid })).ok, true, 'the socket still answers after ack-less events');
  t.ok(sock.connected);
  t.equal((await request(sock, 'session:subscribe', { session_id: sid, since_seq: -1 })).error.code, 'VALIDATION_ERROR');
});

t.test('a failed run whose turn could not be closed (disk full) closes it once writes work again', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const turns = app.service.turns;
  const update = turns.update.bind(turns);
  let full = true;
  turns.update = async (turn) => {
    if (full) throw Object.assign(new Error('could not extend file "base/16384/2619": No space left on device'), { code: '53100' });
    return update(turn);
  };
  t.teardown(() => {
    turns.update = update;
  });
  model.script({ text: ['half ', 'an answer'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'the disk fills' })).ok, true);
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'failed' } });
  const statuses = async () => (await (await app.api(`/api/sessions/${sid}/messages`)).json()).map((m: { status: string }) => m.status);
  t.same(await statuses(), ['completed', 'streaming'], 'the closing write failed too');

  full = false;
  await waitFor(async () => !(await statuses()).includes('streaming'), { timeoutMs: 20_000, everyMs: 200, what: 'the turn closed' });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(msgs[1].status, 'failed', 'closed once space is back');
  t.equal(msgs[1].blocks.map((b: { content: string }) => b.content).join(''), 'half an answer', 'with what had streamed');
});
