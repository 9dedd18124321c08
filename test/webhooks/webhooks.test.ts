import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import type { TestApp } from '../helpers/app.js';
import { receiver } from './receiver.js';

// docs/webhooks.md: Standard Webhooks signatures, durable deliveries retried with backoff, in order
// per session, a delivery log, a test endpoint, the SSRF guard, masked secrets, disabling after 24 h.

const LOCAL = { AGENTSVC_WEBHOOK_ALLOW_PRIVATE: 'true', AGENTSVC_WEBHOOK_RETRY_BASE_MS: '300', AGENTSVC_SCHEDULER_POLL_MS: '100' };

async function register(app: TestApp, json: Record<string, unknown>, key?: string) {
  const res = await app.api('/api/webhooks', { method: 'POST', json, key });
  return { status: res.status, body: await res.json() };
}

async function chat(sid: string, w: Awaited<ReturnType<typeof watch>>, n: number) {
  await request(w.sock, 'chat:send', { session_id: sid, message: `message ${n}` });
  await untilEnd(w.seen, sid, 20_000, n);
}

t.test('a run.completed delivery verifies with the library; the secret is shown once, masked after', async (t) => {
  const { app, model } = await buildWithModel(t, LOCAL);
  const rx = await receiver(t);
  const { status, body: hook } = await register(app, { url: rx.url, events: ['run.completed', 'run.waiting'], description: 'ci' });
  t.equal(status, 201);
  t.match(hook.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/);
  const listed = (await (await app.api('/api/webhooks')).json()).items;
  t.equal(listed.length, 1);
  t.not(listed[0].secret, hook.secret);
  t.notOk(JSON.stringify(listed).includes(hook.secret.slice(6, 30)), 'GET never shows the secret');
  t.equal((await (await app.api(`/api/webhooks/${hook.id}`)).json()).secret, listed[0].secret);

  const sid = await createSession(app, app.adminKey, { intent: 'Say hi' });
  const w = await watch(app, sid);
  model.script({ text: ['hello there'] });
  await chat(sid, w, 1);
  await waitFor(() => rx.got.length === 1, { what: 'the delivery' });
  const [got] = rx.got;
  const payload = new Webhook(hook.secret).verify(got.body, got.headers) as { type: string; data: Record<string, unknown> };
  t.match(payload, { type: 'run.completed', data: { session_id: sid, session_intent: 'Say hi', status: 'completed', finish_reason: 'stop', error: null } });
  t.match(got.headers['webhook-id'], /^msg_/);
  t.throws(() => new Webhook(`whsec_${Buffer.from('another secret of some length').toString('base64')}`).verify(got.body, got.headers), 'another secret does not verify');
  const log = await waitFor(async () => {
    const l = await (await app.api(`/api/webhooks/${hook.id}/deliveries`)).json();
    return l.total === 1 ? l : null;
  });
  t.match(log.items, [{ event: 'run.completed', status: 'delivered', response_status: 200, attempt: 1, error: null }]);

  // A question: run.waiting, with what it waits for in short.
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which branch?', options: [{ label: 'main' }, { label: 'dev' }] }] } }] });
  await chat(sid, w, 2);
  await waitFor(() => rx.got.length === 2, { what: 'the run.waiting delivery' });
  t.match(new Webhook(hook.secret).verify(rx.got[1].body, rx.got[1].headers), {
    type: 'run.waiting',
    data: { session_id: sid, finish_reason: 'tool_question', waiting: [{ kind: 'question', preview: 'Which branch?', tool_call_id: /^/ }] },
  });

  const test = await (await app.api(`/api/webhooks/${hook.id}/test`, { method: 'POST' })).json();
  t.match(test, { event: 'webhook.test', status: 'delivered', response_status: 200, attempt: 1 });
  t.match(new Webhook(hook.secret).verify(rx.got[2].body, rx.got[2].headers), { type: 'webhook.test', data: { webhook_id: hook.id } });
});

t.test('a delivery answered 500 is retried with backoff until it gets a 2xx, same id, signed each time', async (t) => {
  const { app, model } = await buildWithModel(t, LOCAL);
  const rx = await receiver(t, (n) => (n < 2 ? 500 : 204));
  const { body: hook } = await register(app, { url: rx.url, events: ['run.completed'] });
  const sid = await createSession(app);
  const w = await watch(app, sid);
  model.script({ text: ['ok'] });
  await chat(sid, w, 1);
  await waitFor(() => rx.got.length === 3, { what: 'two failures and a success', timeoutMs: 20_000 });
  const ids = new Set(rx.got.map((g) => g.headers['webhook-id']));
  t.equal(ids.size, 1, 'one message id across its attempts');
  for (const g of rx.got) t.match(new Webhook(hook.secret).verify(g.body, g.headers), { type: 'run.completed' });
  const log = await waitFor(async () => {
    const l = await (await app.api(`/api/webhooks/${hook.id}/deliveries`)).json();
    return l.total === 3 ? l : null;
  });
  t.match(
    log.items.map((a: Record<string, unknown>) => [a.attempt, a.status, a.response_status, a.error]),
    [
      [3, 'delivered', 204, null],
      [2, 'failed', 500, 'HTTP 500'],
      [1, 'failed', 500, 'HTTP 500'],
    ],
    'newest first',
  );
  const at = log.items.map((a: { at: string }) => Date.parse(a.at)).reverse();
  t.ok(at[2] - at[1] >= at[1] - at[0], `the wait doubles (${at[1] - at[0]} ms, then ${at[2] - at[1]} ms)`);
  t.ok(at[1] - at[0] >= 300, 'the first retry waits the base delay');
  t.equal((await (await app.api(`/api/webhooks/${hook.id}`)).json()).failing_since, null, 'the success ended the failing streak');
});

t.test('deliveries of a session go in order: a failing one holds back the next of its session, not of another', async (t) => {
  const { app, model } = await buildWithModel(t, LOCAL);
  model.fallback = { text: ['ok'] };
  const a = await createSession(app, app.adminKey, { intent: 'A' });
  const b = await createSession(app, app.adminKey, { intent: 'B' });
  // A's deliveries fail until B's has arrived (and at least twice): were B held back by A, nothing would ever be delivered.
  let bArrived = false;
  let aFailed = 0;
  const rx = await receiver(t, (_n, body) => {
    const { session_id } = JSON.parse(body).data;
    if (session_id === b) bArrived = true;
    if (session_id !== a || (bArrived && aFailed >= 2)) return 200;
    aFailed++;
    return 503;
  });
  await register(app, { url: rx.url, events: ['run.completed'] });
  const wa = await watch(app, a);
  const wb = await watch(app, b);
  for (const n of [1, 2, 3]) await chat(a, wa, n);
  await chat(b, wb, 1);
  await waitFor(() => rx.got.filter((g) => g.status === 200).length === 4, { what: 'all four delivered', timeoutMs: 20_000 });
  const seen = rx.got.map((g) => ({ ...JSON.parse(g.body), status: g.status }));
  const ofA = seen.filter((d) => d.data.session_id === a);
  const firstOk = ofA.findIndex((d) => d.status === 200);
  t.ok(firstOk >= 2, `A's first delivery failed ${firstOk} times first`);
  t.equal(new Set(ofA.slice(0, firstOk + 1).map((d) => d.data.run_id)).size, 1, "nothing else of A was sent before A's first was delivered");
  const delivered = ofA.filter((d) => d.status === 200);
  t.equal(delivered.length, 3, 'each of A delivered once');
  t.equal(new Set(delivered.map((d) => d.data.run_id)).size, 3);
  const times = delivered.map((d) => Date.parse(d.timestamp));
  t.same(times, [...times].sort((x, y) => x - y), 'in the order the runs ended');
  // Both found (a missing one's -1 would pass a bare comparison), B's before A's first success.
  const bAt = seen.findIndex((d) => d.data.session_id === b);
  const aOkAt = seen.findIndex((d) => d.data.session_id === a && d.status === 200);
  t.ok(bAt >= 0 && aOkAt > bAt, `B went while A was failing (B at ${bAt}, A's first success at ${aOkAt})`);
});

t.test('SSRF guard, scope and isolation, disabling after 24 h of failures', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_SCHEDULER_POLL_MS: '100', AGENTSVC_WEBHOOK_RETRY_BASE_MS: '100' });
  for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:9/', 'http://0x7f000001/']) {
    const r = await register(app, { url, events: ['run.failed'] });
    t.equal(r.status, 422, `refused: ${url}`);
    t.match(r.body, { code: 'VALIDATION_ERROR', detail: [{ loc: ['body', 'url'], msg: /refused.*AGENTSVC_WEBHOOK_ALLOW_PRIVATE/ }] });
  }
  t.equal((await register(app, { url: 'ftp://example.com/x', events: ['run.failed'] })).status, 422, 'only http(s)');
  t.equal((await register(app, { url: 'https://example.com/x', events: ['run.exploded'] })).status, 422, 'unknown event');
  t.equal((await (await app.api('/api/webhooks')).json()).items.length, 0, 'nothing stored');

  // A webhook on a private address (stored before the guard, e.g. allowed then) is refused at delivery too.
  const bob = await app.newUser('bob');
  t.equal((await register(app, { url: 'https://example.com/x', events: ['run.failed'], scope: 'install' }, bob.key)).status, 403, 'install scope: admins only');
  const [{ id: adminId }] = await app.service.db.sql<{ id: string }>(`select id from users where id <> ? order by created_at limit 1`, [bob.userId]);
  await app.service.db.sql(`insert into webhooks (id, user_id, url, events, secret) values ('wh_private', ?, 'http://127.0.0.1:9/x', '["run.failed"]', ?)`, [
    adminId,
    `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
  ]);
  t.equal((await app.api('/api/webhooks/wh_private', { key: bob.key })).status, 404, "another user's webhook is 404");
  t.equal((await app.api('/api/webhooks/wh_private', { method: 'DELETE', key: bob.key })).status, 404);
  const test = await (await app.api('/api/webhooks/wh_private/test', { method: 'POST' })).json();
  t.match(test, { status: 'failed', response_status: null, error: /^blocked: / }, 'the delivery itself is refused');

  // A day of failures: the delivery gives up and the webhook is disabled, saying so in the list.
  await app.service.db.sql(`update webhooks set failing_since = now() - interval '25 hours' where id = 'wh_private'`);
  await app.service.db.sql(
    `insert into webhook_deliveries (id, webhook_id, event, session_id, body, created_at) values ('msg_old', 'wh_private', 'run.failed', null, '{}', now() - interval '25 hours')`,
  );
  await app.service.scheduled.delayed.at('webhook', 'wh_private|-', new Date());
  const hook = await waitFor(async () => {
    const h = await (await app.api('/api/webhooks/wh_private')).json();
    return h.enabled ? null : h;
  }, { what: 'the webhook disabled' });
  t.match(hook, { enabled: false, disabled_reason: /^disabled after failing for 24 h/ });
  const [d] = await app.service.db.sql<{ status: string }>(`select status from webhook_deliveries where id = 'msg_old'`);
  t.equal(d.status, 'failed', 'the day-old delivery gave up');
  const back = await (await app.api('/api/webhooks/wh_private', { method: 'PATCH', json: { enabled: true } })).json();
  t.match(back, { enabled: true, disabled_reason: null, failing_since: null }, 'enabled again by its owner');
});
