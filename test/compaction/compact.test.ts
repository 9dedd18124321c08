import t from 'tap';
import { buildWithModel, chatFixture, createSession, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** Compaction (docs/time-travel.md): manual over the socket and REST, automatic in a long run, and its refusals. */

const words = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}${i} `);

/** The summariser answers with a summary; the agent answers long texts (or tool calls when asked). */
function model(body: any) {
  const sys = String(body.messages[0].content);
  if (sys.startsWith('You compact')) return { text: ['- Goal: ', 'talk about ', 'the topics.\n', '- Done: answered m0..m5.'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'slow') return { text: words('s', 200), delayMs: 20 };
  return { text: words(`answer-to-${user.slice(0, 10)}-`, 150) };
}

t.test('manual compaction: streamed as a run, an entry with every field, the model then sees summary + kept turns', async (t) => {
  const { app, model: fake, sid, sock, seen } = await chatFixture(t);
  fake.fallback = model;
  for (let i = 0; i < 6; i++) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: `m${i}` })).ok, true);
    await untilEnd(seen, sid, 20_000, i + 1);
  }
  const stats = async () => (await (await app.api(`/api/sessions/${sid}/context-stats`)).json()).messages_tokens as number;
  const before = await stats();
  const from = seen.length;
  const ack = await request(sock, 'chat:compact', { session_id: sid });
  t.same(ack, { ok: true }, 'chat:compact acked');
  await untilEnd(seen, sid, 20_000, 7);
  const evs = seen.slice(from).filter((e) => e.payload.session_id === sid);
  t.match(evs[0], { name: 'chat:start', payload: { mode: 'compact' } });
  t.match(evs[1], { name: 'turn:start', payload: { role: 'system' } });
  // Deltas within one tick may travel as one event: the streamed text is what counts.
  const summary = evs.filter((e) => e.payload.patch_type === 'add_content').map((e) => e.payload.data.text_delta).join('');
  t.equal(summary, '- Goal: talk about the topics.\n- Done: answered m0..m5.', 'the summary streams as add_content');
  t.match(evs.at(-2), { name: 'turn:end' });
  const end = evs.at(-1)!;
  t.match(end, { name: 'chat:end', payload: { finish_reason: 'stop', result: { compaction_id: /^cmp_/ } } });

  const messages = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const entry = messages.find((m: any) => m.kind === 'compaction');
  t.match(entry, {
    kind: 'compaction',
    role: 'system',
    compaction_id: end.payload.result.compaction_id,
    summary_preview: /^- Goal: talk about the topics/,
    summary_full: /Done: answered m0..m5/,
    trigger: 'manual',
    failure_reason: null,
  });
  t.equal(entry.archived_count, 7, 'everything after m0 but the newest 4 turns');
  t.ok(entry.tokens_before > entry.tokens_after && entry.tokens_after > 0, `${entry.tokens_before} -> ${entry.tokens_after} tokens`);
  t.ok(entry.saved_ratio > 0.3 && entry.saved_ratio < 1, `saved ${entry.saved_ratio}`);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'completed', 'the session is as it was');
  t.equal(await stats(), entry.tokens_after, 'context-stats counts what the model sees after the compaction');
  t.equal(before, entry.tokens_before);

  const n = fake.requests.length;
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'next' })).ok, true);
  await untilEnd(seen, sid, 20_000, 8);
  const sent = fake.requests[n].messages.slice(1);
  t.equal(sent[0].content, 'm0', 'the first user message verbatim');
  t.match(sent[1].content, /^Summary of the earlier conversation:\n- Goal/);
  t.same(
    sent.filter((m: any) => m.role === 'user').map((m: any) => m.content.slice(0, 7)),
    ['m0', 'Summary', 'm4', 'm5', 'next'],
    'then the kept turns (m4, m5 and their answers) and the new message',
  );
  t.notOk(JSON.stringify(sent).includes('answer-to-m1'), 'folded turns are gone from what the model sees');

  // REST: answers the finished entry.
  for (let i = 0; i < 3; i++) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: `r${i}` })).ok, true);
    await untilEnd(seen, sid, 20_000, 9 + i);
  }
  const rest = await (await app.api(`/api/sessions/${sid}/compact`, { method: 'POST' })).json();
  t.match(rest, { kind: 'compaction', trigger: 'manual', failure_reason: null, compaction_id: /^cmp_/ });
  t.match(rest.summary_full, /Goal/);
});

t.test('refusals: too little, a run going on, another user, bad payloads', async (t) => {
  const { app, model: fake, sid, sock, seen } = await chatFixture(t);
  fake.fallback = model;
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'only one' })).ok, true);
  await untilEnd(seen, sid);
  const little = await request(sock, 'chat:compact', { session_id: sid });
  t.match(little, { ok: true, compaction_id: null, reason: /too little to compact/ });
  const rest = await app.api(`/api/sessions/${sid}/compact`, { method: 'POST' });
  t.equal(rest.status, 200);
  t.match(await rest.json(), { compaction_id: null, reason: /too little/ });
  t.notOk(((await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[]).some((m) => m.kind === 'compaction'), 'no entry');

  const busy = await createSession(app);
  for (let i = 0; i < 6; i++) {
    await request(sock, 'session:subscribe', { session_id: busy });
    t.equal((await request(sock, 'chat:send', { session_id: busy, message: `b${i}` })).ok, true);
    await untilEnd(seen, busy, 20_000, i + 1);
  }
  t.equal((await request(sock, 'chat:send', { session_id: busy, message: 'slow' })).ok, true);
  t.match(await request(sock, 'chat:compact', { session_id: busy }), { ok: false, error: { code: 'SESSION_BUSY' } });
  t.equal((await app.api(`/api/sessions/${busy}/compact`, { method: 'POST' })).status, 409);
  await untilEnd(seen, busy, 20_000, 7);

  const bob = await app.newUser('bob');
  t.equal((await app.api(`/api/sessions/${busy}/compact`, { method: 'POST', key: bob.key })).status, 404);
  for (const payload of [{}, { session_id: 5 }, 'x']) {
    t.match(await request(sock, 'chat:compact', payload), { ok: false, error: { code: 'VALIDATION_ERROR' } }, JSON.stringify(payload));
  }
  t.match(await request(sock, 'chat:compact', { session_id: 'sess_nope' }), { ok: false, error: { code: 'NOT_FOUND' } });
});

t.test('automatic compaction keeps a long run going', async (t) => {
  // The system prompt's size decides where the threshold must sit: measure it first.
  const probe = await buildWithModel(t);
  const sysTokens = (await (await probe.app.api(`/api/sessions/${await createSession(probe.app)}/history`)).json()).system_prompt_tokens as number;
  const windowTokens = Math.max(1024, Math.round((sysTokens + 1500) / 0.5));
  const { app, model: fake, sid, sock, seen } = await chatFixture(t, { AGENTSVC_CONTEXT_WINDOW: String(windowTokens), AGENTSVC_COMPACT_AT: '0.5' });
  // Eight tool calls with long arguments, then an answer.
  let calls = 0;
  fake.fallback = (body: any) => {
    if (String(body.messages[0].content).startsWith('You compact')) return model(body);
    if (calls++ < 8) return { toolCalls: [{ name: 'Write', args: { file_path: `f${calls}.txt`, content: words('data', 150).join('') } }] };
    return { text: ['all written'] };
  };
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'work hard' })).ok, true);
  await untilEnd(seen, sid, 60_000);
  t.match(seen.filter((e) => e.name === 'chat:end').at(-1), { payload: { status: 'completed', finish_reason: 'stop' } }, 'the run went on to its end');
  const messages = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const auto = messages.filter((m: any) => m.kind === 'compaction');
  t.ok(auto.length >= 1, `${auto.length} automatic compaction(s)`);
  t.match(auto[0], { trigger: 'auto', failure_reason: null });
  t.ok(auto[0].tokens_after < auto[0].tokens_before);
  const i = fake.requests.findIndex((r: any) => String(r.messages[0].content).startsWith('You compact'));
  const after = fake.requests[i + 1].messages;
  t.ok(after.some((m: any) => typeof m.content === 'string' && m.content.startsWith('Summary of the earlier conversation')), 'the next model call sees the summary');
  t.ok(after.length < fake.requests[i - 1].messages.length, 'and a shorter history than the call before');
  t.comment(`${messages.length} entries, ${messages.filter((m: any) => m.role === 'assistant').length} assistant turns, ${fake.requests.length} model calls`);
  t.equal(messages.filter((m: any) => m.role === 'assistant').length, 9, 'every turn of the run is still listed');
});

t.test('automatic compaction masks old tool outputs first, without a model call, when that is enough', async (t) => {
  const probe = await buildWithModel(t);
  const sysTokens = (await (await probe.app.api(`/api/sessions/${await createSession(probe.app)}/history`)).json()).system_prompt_tokens as number;
  const { app, model: fake, sid, sock, seen } = await chatFixture(t, { AGENTSVC_CONTEXT_WINDOW: String(Math.round((sysTokens + 3000) / 0.5)), AGENTSVC_COMPACT_AT: '0.5', AGENTSVC_COMPACT_KEEP_TURNS: '1' });
  const lines = Array.from({ length: 120 }, (_, i) => `line ${i} of a long file with some words in it`).join('\n');
  await app.api(`/api/sessions/${sid}/files/big.txt`, { method: 'PUT', json: { content: lines } });
  let calls = 0;
  fake.fallback = (body: any) => {
    if (String(body.messages[0].content).startsWith('You compact')) return { text: ['a summary'] };
    if (calls++ < 6) return { toolCalls: [{ name: 'Read', args: { file_path: 'big.txt' } }] };
    return { text: ['read it all'] };
  };
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'read a lot' })).ok, true);
  await untilEnd(seen, sid, 60_000);
  t.match(seen.filter((e) => e.name === 'chat:end').at(-1), { payload: { status: 'completed' } });
  const entries = ((await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[]).filter((m) => m.kind === 'compaction');
  t.ok(entries.length >= 1, `${entries.length} compaction(s)`);
  t.match(entries[0], { trigger: 'auto', summary_full: null, failure_reason: null, summary_preview: /^Elided \d+ old tool output/ });
  t.ok(entries[0].tokens_after < entries[0].tokens_before, `${entries[0].tokens_before} -> ${entries[0].tokens_after}`);
  t.notOk(
    fake.requests.some((r: any) => String(r.messages[0].content).startsWith('You compact')),
    'no summary was needed',
  );
  const lastCall = fake.requests.at(-1).messages;
  t.ok(lastCall.some((m: any) => m.role === 'tool' && m.content.startsWith('[output of Read elided')), 'old outputs elided');
  t.ok(lastCall.at(-1).role === 'tool' && lastCall.at(-1).content.includes('line 119'), 'the newest output intact');
});
