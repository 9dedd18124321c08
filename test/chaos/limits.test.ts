import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { catchCrashes, connectedSocket, deadline, mb, rssSampler, transcriptProblems } from '../helpers/chaos.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Abuse at the edges: a model that stalls after its headers, a model that streams nothing, a client
 * that subscribes to 1,000 sessions, a tool that prints 1 GB. Each must end with a clear outcome
 * within a bound, and the service's memory (it runs in this process) must stay bounded.
 */

const RSS_BOUND = 300 * 1048576;

t.test('a model that stalls after its headers: MODEL_TIMEOUT, and chat:stop works', async (t) => {
  const crashes = catchCrashes(t);
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_TIMEOUT_MS: '1500' });
  const sid = await createSession(app);
  const sock = await connectedSocket(app);
  const seen = record(sock);
  await subscribe(sock, sid);
  model.fallback = { hangAfterHeaders: true };
  const t0 = Date.now();
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'stall' })).ok, true);
  await untilEnd(seen, sid, 15_000).catch((e) => t.fail(`no clear outcome: ${e.message}`));
  t.comment(`stalled model ended the run in ${Date.now() - t0} ms (timeout 1500 ms, SDK retries included)`);
  const err = seen.find((e) => e.name === 'system:error')?.payload;
  t.equal(err?.code, 'MODEL_TIMEOUT', `system:error MODEL_TIMEOUT (got ${JSON.stringify(err)})`);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'failed', finish_reason: 'error' } });
  t.same(await transcriptProblems(app.api, sid, { status: 'failed' }), [], 'transcript valid');

  // chat:stop while the stalled stream is open.
  const from = seen.length;
  const calls = model.timeline.length;
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'stall again' })).ok, true);
  await waitFor(() => model.timeline.length > calls, { what: 'the stalling model call open' });

  const t1 = Date.now();
  t.match(await request(sock, 'chat:stop', { session_id: sid }), { ok: true, stopped: true });
  await untilEnd(seen, sid, 5000, 2).catch((e) => t.fail(e.message));
  t.ok(Date.now() - t1 < 2000, `stopped within 2 s (${Date.now() - t1} ms)`);
  t.match(seen.slice(from).at(-1), { name: 'chat:end', payload: { status: 'interrupted' } });
  t.same(await transcriptProblems(app.api, sid, { status: 'interrupted' }), [], 'transcript valid after stop');
  t.same(crashes, []);
});

t.test('a model that answers 200 with an empty stream: a clear end, not a hang', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_TIMEOUT_MS: '5000' });
  model.fallback = { emptyStream: true };
  const sid = await createSession(app);
  const sock = await connectedSocket(app);
  const seen = record(sock);
  await subscribe(sock, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'anything?' })).ok, true);
  await untilEnd(seen, sid, 15_000).catch((e) => t.fail(`no clear outcome: ${e.message}`));
  const end = seen.at(-1)!.payload;
  t.comment(`empty stream: chat:end ${JSON.stringify(end)}; system:error ${JSON.stringify(seen.find((e) => e.name === 'system:error')?.payload ?? null)}`);
  t.ok(['completed', 'failed'].includes(end.status), 'completed (empty answer) or failed');
  if (end.status === 'failed') t.ok(seen.some((e) => e.name === 'system:error'), 'a failure says why');
  t.same(await transcriptProblems(app.api, sid, { status: ['completed', 'failed'] }), [], 'transcript valid');
  model.fallback = { text: ['fine'] };
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'again' })).ok, true, 'the session accepts the next chat');
  await untilEnd(seen, sid, 15_000, 2);
});

t.test('one socket subscribes to 1,000 sessions: clear outcome, bounded memory', async (t) => {
  const crashes = catchCrashes(t);
  const { app, model } = await buildWithModel(t);
  const sids: string[] = [];
  for (let i = 0; i < 1000; i += 50) sids.push(...(await Promise.all(Array.from({ length: 50 }, () => createSession(app)))));
  const sock = await connectedSocket(app);
  const seen = record(sock);
  const base = process.memoryUsage().rss;
  const rss = rssSampler();
  const t0 = Date.now();
  const acks = await deadline(Promise.all(sids.map((sid) => request(sock, 'session:subscribe', { session_id: sid, since_seq: 0 }, 30_000))), 60_000, '1,000 subscribe acks');
  const ok = acks.filter((a) => a.ok).length;
  const codes = [...new Set(acks.filter((a) => !a.ok).map((a) => a.error?.code))];
  t.comment(`subscriptions: ${ok} ok, ${acks.length - ok} refused (${codes.join(', ') || 'none'}) in ${Date.now() - t0} ms`);
  t.ok(acks.every((a) => a.ok === true || (typeof a.error?.code === 'string' && typeof a.error?.message === 'string')), 'every ack is ok or a clear error');
  t.notOk(codes.includes('INTERNAL'), 'no INTERNAL error');
  // Served subscriptions deliver: a chat on the last served session reaches this socket.
  const served = sids.filter((_, i) => acks[i].ok);
  if (served.length) {
    model.fallback = { text: ['hello ', 'there'] };
    const other = await connectedSocket(app);
    await request(other, 'chat:send', { session_id: served.at(-1), message: 'hi' });
    await untilEnd(seen, served.at(-1)!, 15_000).catch((e) => t.fail(e.message));
  }
  const max = rss.stop();
  t.comment(`max RSS ${mb(max)} MB (delta ${mb(max - base)} MB)`);
  t.ok(max - base < RSS_BOUND, `RSS grew by ${mb(max - base)} MB (bound ${mb(RSS_BOUND)} MB)`);
  t.equal((await app.api('/api/health')).status, 200);
  t.same(crashes, []);
});

t.test('a tool that prints 1 GB: the run completes with a truncated result, bounded memory', async (t) => {
  const crashes = catchCrashes(t);
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_TIMEOUT_MS: '20000' });
  model.script(
    { toolCalls: [{ name: 'Bash', args: { command: "head -c 1000000000 /dev/zero | tr '\\0' a", timeout: 90_000 } }] },
    { text: ['printed'] },
  );
  const sid = await createSession(app);
  const sock = await connectedSocket(app);
  const seen = record(sock);
  await subscribe(sock, sid);
  const base = process.memoryUsage().rss;
  const rss = rssSampler();
  const t0 = Date.now();
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'print a lot' })).ok, true);
  await untilEnd(seen, sid, 100_000).catch((e) => t.fail(`no end: ${e.message}`));
  const max = rss.stop();
  const result = seen.find((e) => e.name === 'turn:patch' && e.payload.patch_type === 'tool_result')?.payload.data;
  t.comment(`1 GB tool: run took ${Date.now() - t0} ms; result ${result?.result.length} chars, status ${result?.status}; max RSS ${mb(max)} MB (delta ${mb(max - base)} MB)`);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } }, 'the run completes');
  t.ok(result && result.result.length <= app.config.limits.toolOutput + 1000, 'the result the model sees is bounded');
  t.match(result?.result, /truncat|cut/i, 'and says it was truncated');
  t.ok(max - base < RSS_BOUND, `RSS grew by ${mb(max - base)} MB (bound ${mb(RSS_BOUND)} MB)`);
  t.same(await transcriptProblems(app.api, sid), [], 'transcript valid');
  t.same(crashes, []);
});
