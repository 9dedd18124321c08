import t from 'tap';
import { buildWithModel, chatFixture, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { pace, waitFor } from '../helpers/wait.js';
import type { HookEvents } from '../../src/core/engine/hooks.js';

// docs/models-and-usage.md: retries before the first delta with backoff and retry-after, fallback down the
// list, chat:stop ending a backoff at once, the answering model on the turn.

function gaps(timeline: { at: number }[]) {
  return timeline.slice(1).map((x, i) => x.at - timeline[i].at);
}

t.test('a 429 storm: retried with growing waits, then the answer', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const calls: HookEvents['model.call'][] = [];
  app.service.hooks.on('model.call', (c) => void calls.push(c));
  model.script({ status: 429 }, { status: 429 }, { status: 429 }, { text: ['made it'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid, 30_000);
  t.match(seen.at(-1)?.payload, { status: 'completed', finish_reason: 'stop' });
  t.same(model.timeline.map((x) => x.status), [429, 429, 429, 200], 'three 429s, then a stream');
  const waits = gaps(model.timeline);
  t.comment(`request timeline (ms after the first): ${model.timeline.map((x) => x.at - model.timeline[0].at).join(', ')}`);
  // Backoff 0.5 s, 1 s, 2 s, each jittered to between half and all of it.
  t.ok(waits[0] >= 240 && waits[0] < 1000, `first wait ${waits[0]} ms`);
  t.ok(waits[1] >= 490 && waits[2] >= 990, `waits grow: ${waits.join(', ')}`);
  t.equal(calls.length, 1, 'one model call');
  t.match(calls[0], { outcome: 'ok', attempts: 4 });
  t.notOk(seen.some((e) => e.name === 'system:error'), 'no error reached the client');
});

t.test('retry-after is honoured; retries run out into MODEL_ERROR', async (t) => {
  const { model, sid, sock, seen } = await chatFixture(t, { AGENTSVC_MODEL_RETRIES: '1' });
  model.script({ status: 503, headers: { 'retry-after': '1.2' } }, { text: ['late'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid, 30_000);
  t.match(seen.at(-1)?.payload, { status: 'completed' });
  t.ok(gaps(model.timeline)[0] >= 1150, `waited ${gaps(model.timeline)[0]} ms for retry-after 1.2 s`);

  model.script({ status: 500 }, { status: 502 }, { text: ['never'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'again' });
  await untilEnd(seen, sid, 30_000, 2);
  t.match(seen.find((e) => e.name === 'system:error')?.payload, { code: 'MODEL_ERROR', message: /502/ });
  t.match(seen.at(-1)?.payload, { status: 'failed' });
  t.equal(model.timeline.length, 4, '1 + 1 retry for the second run');
});

t.test('not retried: a 400, and a stream cut after its first delta', async (t) => {
  const { model, sid, sock, seen } = await chatFixture(t);
  model.script({ status: 400 }, { text: ['x'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'bad' });
  await untilEnd(seen, sid, 30_000);
  const endpoint = model.baseUrl.replace(/\/+$/, '');
  t.match(seen.find((e) => e.name === 'system:error')?.payload, { code: 'MODEL_ERROR', message: `model endpoint ${endpoint} answered 400` }, 'names the endpoint and the status');
  model.clear();
  model.script({ text: ['a', 'b', 'c'], breakAfter: 3, delayMs: 30 }, { text: ['x'] });
  const from = seen.length;
  await request(sock, 'chat:send', { session_id: sid, message: 'cut' });
  await untilEnd(seen, sid, 30_000, 2);
  t.match(seen.slice(from).find((e) => e.name === 'system:error')?.payload, { code: 'MODEL_STREAM_BROKEN', message: `model stream from ${endpoint} broke` });
  t.equal(model.timeline.length, 2, 'one request each');
});

t.test('a refused key and an endpoint nobody serves: named, with what to do', async (t) => {
  const { model, sid, sock, seen } = await chatFixture(t, { AGENTSVC_MODEL_RETRIES: '0' });
  model.script({ status: 401 });
  await request(sock, 'chat:send', { session_id: sid, message: 'key' });
  await untilEnd(seen, sid, 30_000);
  const endpoint = model.baseUrl.replace(/\/+$/, '');
  t.match(seen.find((e) => e.name === 'system:error')?.payload, { code: 'MODEL_ERROR', message: `model endpoint ${endpoint} answered 401` });
  t.match(seen.find((e) => e.name === 'system:error')?.payload.message, /check the API key: OPENAI_API_KEY/, 'the hint');
  await model.close();
  const from = seen.length;
  await request(sock, 'chat:send', { session_id: sid, message: 'gone' });
  await untilEnd(seen, sid, 30_000, 2);
  t.match(seen.slice(from).find((e) => e.name === 'system:error')?.payload, {
    code: 'MODEL_STREAM_BROKEN',
    message: `could not reach the model endpoint ${endpoint}`,
  });
  t.match(seen.slice(from).find((e) => e.name === 'system:error')?.payload.message, /agentsvc doctor/, 'the hint');
});

t.test('chat:stop ends a retry-after wait at once', async (t) => {
  const { model, sid, sock, seen } = await chatFixture(t);
  model.script({ status: 429, headers: { 'retry-after': '30' } }, { text: ['never'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await waitFor(() => model.timeline.length >= 1, { what: 'the first model call' });
  // No event marks the router's retry-after wait: give the 429 time to reach it.
  await pace(200, 'the 429 reaches the router, which then waits out retry-after (30 s)');

  const t0 = Date.now();
  t.match(await request(sock, 'chat:stop', { session_id: sid }), { ok: true, stopped: true });
  await untilEnd(seen, sid, 5000);
  const took = Date.now() - t0;
  t.ok(took < 2000, `stopped in ${took} ms`);
  t.match(seen.at(-1)?.payload, { status: 'interrupted', finish_reason: 'interrupted' });
  t.equal(model.timeline.length, 1, 'no retry after the stop');
});

t.test('a dead primary falls back down the list; the turn names the model that answered', async (t) => {
  const backup = await startFakeModel();
  t.teardown(() => backup.close());
  const models = [
    { id: 'primary', fallback: ['dead-too', 'backup'], price: { input: 1, output: 2 } },
    { id: 'dead-too', base_url: 'http://127.0.0.1:9/v1' },
    { id: 'backup', base_url: backup.baseUrl, api_key_env: 'BACKUP_KEY', context_window: 32000, price: { input: 0.5, output: 1.5, cached_input: 0.1 } },
  ];
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL: 'primary', AGENTSVC_MODELS: JSON.stringify(models), AGENTSVC_MODEL_RETRIES: '1', BACKUP_KEY: 'sk-backup' });
  model.fallback = { status: 503 };
  backup.fallback = { text: ['from backup'] };
  const calls: HookEvents['model.call'][] = [];
  app.service.hooks.on('model.call', (c) => void calls.push(c));
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'hello' });
  await untilEnd(seen, sid, 30_000);
  t.match(seen.at(-1)?.payload, { status: 'completed' });
  t.same(model.timeline.map((x) => [x.model, x.status]), [['primary', 503], ['primary', 503]], 'primary: a try and a retry');
  t.same(backup.timeline.map((x) => [x.model, x.status]), [['backup', 200]], 'then the backup (after the unreachable one)');
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(msgs[1].model, 'backup', 'the turn names the answering model');
  t.equal(msgs[1].context_window, 32000, "and reports that model's context window");
  t.match(calls[0], { model: 'backup', fallbackFrom: 'primary', attempts: 5 });
  const list = await (await app.api('/api/config/models')).json();
  t.same(list.models.map((m: { id: string }) => m.id), ['primary', 'dead-too', 'backup']);
  t.match(list.models[2], { context_window: 32000, price: { input: 0.5, output: 1.5, cached_input: 0.1 } });
  t.same(list.models[0].price, { input: 1, output: 2, cached_input: 1 });
  t.notMatch(JSON.stringify(list), /127\.0\.0\.1|sk-backup|BACKUP_KEY/, 'no URL or key');
});
