import t from 'tap';
import { applyPatch, type Turn } from '../../src/core/conversation/turns.js';
import { buildWithModel, createSession, record, shape, subscribe, untilEnd, type Recorded } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { quietFor, waitFor } from '../helpers/wait.js';

/** Rebuild turns from events the way a client does (turn:start, patches, turn:end). */
function clientTurns(events: Recorded[]): Map<string, Turn> {
  const turns = new Map<string, Turn>();
  for (const e of events) {
    if (e.name === 'turn:end') turns.set(e.payload.turn_id, e.payload.turn);
    if (e.name === 'turn:patch') {
      const t = turns.get(e.payload.turn_id);
      if (t) applyPatch(t, { patch_type: e.payload.patch_type, data: e.payload.data });
    }
  }
  return turns;
}

t.test('a run with text, a tool call and a final answer: exact events, stored turns equal streamed ones', async (t) => {
  const { app, model } = await buildWithModel(t);
  const calls: unknown[] = [];
  app.service.tools.register({
    name: 'Echo',
    description: 'Echo the text back.',
    provider: 'builtin',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
    execute: async (args: { text: string }, ctx) => {
      calls.push({ args, session: ctx.sessionId, call: ctx.callId });
      return `echo: ${args.text}`;
    },
  });
  model.script(
    { reasoning: ['Thinking ', 'hard.'], text: ['Let me ', 'check.'], toolCalls: [{ name: 'Echo', args: { text: 'hi' } }], usage: { prompt_tokens: 100, completion_tokens: 20 } },
    { text: ['Done: ', 'hi'], usage: { prompt_tokens: 150, completion_tokens: 5 } },
  );
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  const ack = await request(sock, 'chat:send', { session_id: sid, message: 'say hi' });
  t.equal(ack.ok, true);
  t.match(ack.turn_id, /^turn_/);
  await untilEnd(seen, sid);

  // Text deltas of a turn that arrive within one tick travel as one event: compare runs of them as one.
  const deltaRuns = (xs: string[]) => xs.filter((x, i) => !/add_(content|thinking)$/.test(x) || x !== xs[i - 1]);
  t.same(deltaRuns(shape(seen)), [
    'chat:start',
    'turn:start', 'turn:end',
    'turn:start',
    'turn:patch:add_thinking',
    'turn:patch:add_content',
    'turn:patch:usage',
    'turn:patch:add_tool_call', 'turn:patch:tool_result',
    'turn:end',
    'turn:start',
    'turn:patch:add_content', 'turn:patch:usage',
    'turn:end',
    'chat:end',
  ]);
  t.same(seen.map((e) => e.payload.seq), seen.map((_, i) => i + 1), 'seq rises by 1 from 1');
  t.same([...new Set(seen.map((e) => e.payload.session_id))], [sid], 'every event names the session');
  t.same(seen[0].payload, { session_id: sid, seq: 1, mode: 'executing', headless: false });
  t.match(seen[1].payload, { role: 'user', turn_id: ack.turn_id, parent_fork_tool_call_id: null });
  t.match(seen[3].payload, { role: 'assistant', status: 'streaming', parent_fork_tool_call_id: null });
  const addCall = seen.find((e) => e.payload.patch_type === 'add_tool_call')!.payload.data;
  t.match(addCall, { tool_name: 'Echo', display_name: 'Echo', arguments: '{"text":"hi"}', status: 'pending' });
  t.match(addCall.id, /^tc_/);
  const result = seen.find((e) => e.payload.patch_type === 'tool_result')!.payload.data;
  t.match(result, { tool_call_id: addCall.id, result: 'echo: hi', status: 'done' });
  t.type(result.duration_ms, 'number');
  // usage: the sum of the run's two model calls (100 + 150 in, 20 + 5 out; no price, so cost null).
  t.same(seen.at(-1)!.payload, { session_id: sid, seq: seen.length, status: 'completed', result: null, finish_reason: 'stop', usage: { input_tokens: 250, output_tokens: 25, cost: null } });
  t.same(calls, [{ args: { text: 'hi' }, session: sid, call: addCall.id }]);

  const stored: Turn[] = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(stored.length, 3);
  t.same(stored.map((m) => [m.sequence, m.role, m.status, m.loop_id, m.kind]), [
    [0, 'user', 'completed', 'root', 'message'],
    [1, 'assistant', 'completed', 'root', 'message'],
    [2, 'assistant', 'completed', 'root', 'message'],
  ]);
  const fromEvents = [...clientTurns(seen).values()];
  t.same(stored, fromEvents, 'stored projection equals what the events built, field for field');
  const ends = seen.filter((e) => e.name === 'turn:end').map((e) => e.payload.turn);
  t.same(stored, ends, 'turn:end carries the full projection');
  const a1 = stored[1];
  t.same(a1.blocks.map((b) => [b.type, b.content]), [['thinking', 'Thinking hard.'], ['text', 'Let me check.'], ['tool_use', '{"text":"hi"}'], ['tool_result', 'echo: hi']]);
  t.same(a1.usage, { input_tokens: 100, output_tokens: 20 });
  t.equal(a1.model, 'fake-model');
  t.ok(a1.context_window > 0);
  t.same(stored[0].usage, { input_tokens: 0, output_tokens: 0 });
  t.equal(stored[0].model, 'fake-model');

  // What the model saw: the real SDK path, function tools, the tool result fed back.
  t.equal(model.requests.length, 2);
  t.equal(model.requests[0].stream, true);
  t.ok(model.requests[0].tools.some((x: any) => x.type === 'function' && x.function.name === 'Echo'));
  const second = model.requests[1].messages;
  t.match(second.at(-2), { role: 'assistant', tool_calls: [{ id: addCall.id, function: { name: 'Echo' } }] });
  t.match(second.at(-1), { role: 'tool', tool_call_id: addCall.id, content: 'echo: hi' });

  const detail = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(detail.status, 'completed');

  // A second chat carries the history.
  const firstRun = seen.length;
  model.script({ text: ['again'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'more' });
  await untilEnd(seen, sid, 20_000, 2);
  const third = model.requests[2].messages;
  t.same(third.filter((m: any) => m.role === 'user').map((m: any) => m.content), ['say hi', 'more']);
  t.equal(seen.filter((e) => e.name === 'chat:start').at(-1)!.payload.seq, firstRun + 1, 'seq continues across runs');
});

t.test('reconnect mid-run with since_seq: every event exactly once', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ text: Array.from({ length: 40 }, (_, i) => `w${i} `), delayMs: 15 });
  const sid = await createSession(app);
  const a = app.socket();
  await next(a, 'connect');
  const first = record(a);
  await subscribe(a, sid);
  await request(a, 'chat:send', { session_id: sid, message: 'stream' });
  await waitFor(() => first.filter((e) => e.name === 'turn:patch').length >= 8, { everyMs: 5, what: 'eight patches' });
  a.disconnect();
  const last = first.at(-1)!.payload.seq;
  // Events flow while nobody listens: the log grows past what the first socket saw.
  const stored = async () => (await app.service.db.sql<{ n: number | null }>('select max(seq)::int as n from session_events where session_id = ?', [sid]))[0].n ?? 0;
  await waitFor(async () => (await stored()) > last + 3, { what: 'events stored while nobody listens' });

  const b = app.socket();
  await next(b, 'connect');
  const second = record(b);
  await subscribe(b, sid, last);
  await untilEnd(second, sid);
  const all = [...first, ...second].map((e) => e.payload.seq);
  t.same(all, all.map((_, i) => i + 1), 'no gap, no repeat');
  const text = [...first, ...second].filter((e) => e.payload.patch_type === 'add_content').map((e) => e.payload.data.text_delta).join('');
  t.equal(text, Array.from({ length: 40 }, (_, i) => `w${i} `).join(''));

  // A late subscriber replays the whole run from 0.
  const c = app.socket();
  await next(c, 'connect');
  const third = record(c);
  await subscribe(c, sid, 0);
  t.same(third.map((e) => e.payload.seq), all);
  // Live-only subscription gets nothing old.
  const d = app.socket();
  await next(d, 'connect');
  const fourth = record(d);
  await subscribe(d, sid);
  await quietFor(50, 'an old event replayed to a live-only subscriber');
  t.same(fourth, []);

});

t.test('per-session subscriptions and per-user isolation', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = { text: ['x'] };
  const s1 = await createSession(app);
  const s2 = await createSession(app);
  const bob = await app.newUser();
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, s1);
  const other = app.socket();
  await next(other, 'connect');
  await request(other, 'chat:send', { session_id: s2, message: 'hi' });
  await request(other, 'chat:send', { session_id: s1, message: 'hi' });
  await untilEnd(seen, s1);
  t.same([...new Set(seen.map((e) => e.payload.session_id))], [s1], 'only the subscribed session arrives');

  const bs = app.socket(bob.key);
  await next(bs, 'connect');
  const bobSeen = record(bs);
  const sub = await request(bs, 'session:subscribe', { session_id: s1 });
  t.same(sub, { ok: false, error: { code: 'NOT_FOUND', message: 'session not found' } });
  const send = await request(bs, 'chat:send', { session_id: s1, message: 'steal' });
  t.equal(send.error.code, 'NOT_FOUND');
  t.equal((await app.api(`/api/sessions/${s1}/messages`, { key: bob.key })).status, 404);
  t.same(bobSeen, []);
});
