import t from 'tap';
import { buildWithModel, chatFixture, createSession, watch, untilEnd, type Recorded } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';

/** Every chat:end of a session, resolved with the count reached. */
function endsOf(seen: Recorded[], sid: string) {
  return seen.filter((e) => e.name === 'chat:end' && e.payload.session_id === sid);
}

t.test('chat:send sent the moment chat:end arrives, by 10 clients at once, 12 chats each', async (t) => {
  const { app, model } = await buildWithModel(t);
  app.service.tools.register({ name: 'Echo', description: 'echo', provider: 'builtin', parameters: { type: 'object' }, execute: async () => 'echoed' });
  // Every other model call asks for a tool, so runs end both right after a tool and after text.
  let n = 0;
  model.fallback = { text: ['done'] };
  model.script(...Array.from({ length: 400 }, () => () => (n++ % 2 === 0 ? { toolCalls: [{ name: 'Echo', args: {} }] } : { text: ['ok ', 'then'] })));
  const CLIENTS = 10;
  const CHATS = 12;
  const results = await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      const sid = await createSession(app);
      const { sock, seen } = await watch(app, sid);
      const acks: any[] = [];
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`client ${c}: only ${endsOf(seen, sid).length} of ${CHATS} chats ended; acks ${JSON.stringify(acks.filter((a) => !a.ok))}`)), 60_000);
        const send = (i: number) => sock.emit('chat:send', { session_id: sid, message: `chat ${i}` }, (ack: any) => acks.push(ack));
        // record() listens first, so `seen` already holds this chat:end.
        sock.on('chat:end', (p: any) => {
          if (p.session_id !== sid) return;
          const done = endsOf(seen, sid).length;
          if (done >= CHATS) {
            clearTimeout(timer);
            resolve();
          } else send(done);
        });
        send(0);
      });
      return { sid, seen, acks };
    }),
  );
  for (const { sid, seen, acks } of results) {
    t.same(acks.filter((a) => !a.ok), [], `${sid}: every chat:send acked ok`);
    const ends = endsOf(seen, sid);
    t.equal(ends.length, CHATS);
    t.same(ends.map((e) => e.payload.status), Array(CHATS).fill('completed'), 'every chat completed');
    const seqs = seen.filter((e) => e.payload.session_id === sid).map((e) => e.payload.seq);
    t.same(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), 'contiguous seqs 1..N, each once');
    const detail = await (await app.api(`/api/sessions/${sid}`)).json();
    t.equal(detail.status, 'completed');
    const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    t.equal(msgs.filter((m: any) => m.role === 'user').length, CHATS);
    t.same([...new Set(msgs.map((m: any) => m.status))], ['completed'], 'every turn closed');
    t.same([...new Set(msgs.flatMap((m: any) => m.tool_calls.map((c: any) => c.status)))], ['done'], 'every tool call closed');
  }
});

t.test('a message with a NUL character is refused before anything is stored', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  for (const message of ['a\u0000b', [{ type: 'text', text: 'x\u0000' }]]) {
    const ack = await request(sock, 'chat:send', { session_id: sid, message });
    t.equal(ack.ok, false);
    t.equal(ack.error.code, 'VALIDATION_ERROR');
    t.match(ack.error.message, /NUL/);
  }
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'created', 'the session is untouched');
  t.same(await (await app.api(`/api/sessions/${sid}/messages`)).json(), [], 'nothing stored');
  t.same(seen, [], 'no event sent');
  // The model's own NUL characters (in text or tool output) are stored as U+FFFD instead of failing the run.
  model.script({ text: ['nul \u0000 here'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'fine' })).ok, true);
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(msgs[1].blocks[0].content, 'nul \uFFFD here');
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200, 'and it can be deleted');
});

t.test('failures inside a run end that run failed, never the process; the session takes the next chat', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  let ends = 0;
  const turns = app.service.turns;
  const update = turns.update.bind(turns);

  // A tool that crashes with a plain Error: a tool error the model sees; the run goes on.
  app.service.tools.register({ name: 'Crash', description: 'crash', provider: 'builtin', parameters: { type: 'object' }, execute: async () => { throw new TypeError('kaboom'); } });
  model.script({ toolCalls: [{ name: 'Crash', args: {} }] }, { text: ['recovered'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'crash a tool' });
  await untilEnd(seen, sid, 20_000, ++ends);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.match(msgs[1].tool_calls[0], { status: 'error', result: /kaboom/ });

  // Storing a turn fails mid-run (the database hiccups): the run ends failed with system:error.
  let failNext = true;
  turns.update = async (turn) => {
    if (failNext && turn.role === 'assistant') {
      failNext = false;
      throw new Error('simulated storage failure');
    }
    return update(turn);
  };
  model.script({ text: ['will not be stored'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'storage fails' })).ok, true);
  await untilEnd(seen, sid, 20_000, ++ends);
  t.match(seen.filter((e) => e.name === 'system:error').at(-1), { payload: { code: 'RUN_FAILED' } });
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'failed', finish_reason: 'error' } });
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'failed');

  // Storing the user turn fails in the database: it is one statement with the claim and the first
  // events, so the ack says so and nothing of it is stored (the session as it was, no event).
  const insertFrom = turns.insertFrom.bind(turns);
  turns.insertFrom = (src, turn, content) => {
    const q = insertFrom(src, turn, content);
    return { ...q, sql: `${q.sql} where 1 / 0 = 1` };
  };
  const before = { events: seen.length, messages: (await (await app.api(`/api/sessions/${sid}/messages`)).json()).length };
  const ack = await request(sock, 'chat:send', { session_id: sid, message: 'insert fails' });
  t.match(ack, { ok: false, error: { code: 'INTERNAL' } });
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'failed', 'the claim did not happen');
  t.equal((await (await app.api(`/api/sessions/${sid}/messages`)).json()).length, before.messages, 'no turn stored');
  t.equal(await app.service.log.latest(sid), seen[seen.length - 1].payload.seq, 'no event stored after the last one sent');
  t.equal(seen.length, before.events, 'no event sent');
  delete (turns as { insertFrom?: unknown }).insertFrom;

  // Releasing the session at the end fails: chat:end still goes out, and the lost claim is closed.
  const store = (app.service.executor as unknown as { deps: { store: { release: (...a: unknown[]) => Promise<void> } } }).deps.store;
  const release = store.release.bind(store);
  let failRelease = true;
  store.release = async (...a: unknown[]) => {
    if (failRelease) {
      failRelease = false;
      throw new Error('simulated release failure');
    }
    return release(...a);
  };
  model.script({ text: ['fine'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'release fails' })).ok, true);
  await untilEnd(seen, sid, 20_000, ++ends);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'running', 'left running by the failed release');
  t.same(await app.service.executor.recover(), [sid], 'recovery closes a claim its own process lost');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');

  model.script({ text: ['all good'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'and now?' })).ok, true);
  await untilEnd(seen, sid, 20_000, ends + 2);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
  t.equal((await fetch(`${app.url}/api/health`)).status, 200, 'the process is still serving');
});

t.test('an exception nobody caught is logged and the process keeps serving', async (t) => {
  const { app } = await buildWithModel(t);
  const before = process.listenerCount('unhandledRejection');
  t.ok(before >= 1, 'a last-resort handler is installed while the service runs');
  const handled = new Promise((r) => process.once('unhandledRejection', r));
  void Promise.reject(new Error('a bug somewhere'));
  await handled;
  t.equal((await fetch(`${app.url}/api/health`)).status, 200);

});

t.test('one socket may subscribe to a bounded number of sessions', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_MAX_SUBSCRIPTIONS_PER_SOCKET: '3' });
  const sock = app.socket();
  await next(sock, 'connect');
  const sids = await Promise.all([1, 2, 3, 4].map(() => createSession(app)));
  for (const sid of sids.slice(0, 3)) t.equal((await request(sock, 'session:subscribe', { session_id: sid })).ok, true);
  t.equal((await request(sock, 'session:subscribe', { session_id: sids[0] })).ok, true, 'resubscribing is not a new subscription');
  t.match(await request(sock, 'session:subscribe', { session_id: sids[3] }), { ok: false, error: { code: 'RATE_LIMITED' } });
  await request(sock, 'session:unsubscribe', { session_id: sids[0] });
  t.equal((await request(sock, 'session:subscribe', { session_id: sids[3] })).ok, true, 'room again after unsubscribing');
});

t.test('a user runs a bounded number of chats at once', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MAX_RUNS_PER_USER: '2' });
  model.fallback = { hang: true };
  const sock = app.socket();
  await next(sock, 'connect');
  const sids = await Promise.all([1, 2, 3].map(() => createSession(app)));
  t.equal((await request(sock, 'chat:send', { session_id: sids[0], message: 'a' })).ok, true);
  t.equal((await request(sock, 'chat:send', { session_id: sids[1], message: 'b' })).ok, true);
  t.match(await request(sock, 'chat:send', { session_id: sids[2], message: 'c' }), { ok: false, error: { code: 'RATE_LIMITED' } });
  t.equal((await (await app.api(`/api/sessions/${sids[2]}`)).json()).status, 'created', 'refused before anything changed');
  await request(sock, 'chat:stop', { session_id: sids[0] });
  t.equal((await request(sock, 'chat:send', { session_id: sids[2], message: 'c' })).ok, true, 'a slot is free again');
  await request(sock, 'chat:stop', { session_id: sids[1] });
  await request(sock, 'chat:stop', { session_id: sids[2] });
});
