import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { receiver } from './receiver.js';

// docs/webhooks.md events: budget.warning when a run's call takes a budget past 80% (once per
// period), budget.exceeded when a spent budget stops a run; both signed like every delivery.

t.test('a budget passing 80% and then stopping the run sends budget.warning and budget.exceeded, signed', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_WEBHOOK_ALLOW_PRIVATE: 'true', AGENTSVC_WEBHOOK_RETRY_BASE_MS: '300', AGENTSVC_SCHEDULER_POLL_MS: '100' });
  app.service.tools.register(echoTool());
  const { got, url } = await receiver(t, () => 204);
  const res = await app.api('/api/webhooks', { method: 'POST', json: { url, events: ['budget.warning', 'budget.exceeded'] } });
  t.equal(res.status, 201);
  const hook = await res.json();

  // 15 tokens a call: 15, 30, 45 (past 80% of 50: the warning), 60 (spent: the run stops).
  model.fallback = { toolCalls: [{ name: 'Echo', args: { say: 'again' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } };
  const sid = await createSession(app, app.adminKey, { intent: 'Spend' });
  t.equal((await app.api(`/api/sessions/${sid}/budget`, { method: 'PUT', json: { budgets: [{ period: 'day', max_tokens: 50 }] } })).status, 200);
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'work' });
  await untilEnd(seen, sid);
  t.match(seen.at(-1)?.payload, { status: 'completed', finish_reason: 'budget' });

  await waitFor(() => got.length >= 2, { what: 'two deliveries' });
  const verified = got.map((g) => new Webhook(hook.secret).verify(g.body, g.headers) as { type: string; data: Record<string, unknown> });
  t.same(
    verified.map((v) => v.type),
    ['budget.warning', 'budget.exceeded'],
    'the warning first (queued during the run), then the stop',
  );
  t.match(verified[0].data, {
    session_id: sid,
    message: /session budget \(per day: 45 of 50 tokens\) is past 80%/,
    budget: { scope: 'session', session_id: sid, period: 'day', max_tokens: 50, max_cost: null, used_tokens: 45, resets_at: /Z$/ },
  });
  t.match(verified[1].data, { session_id: sid, message: /session budget \(per day: 60 of 50 tokens\) is spent; it resets at/ });
  t.match(verified[0].data.run_id, /./);
  t.equal(verified[0].data.run_id, verified[1].data.run_id, 'both name the run');
  t.notOk(verified.some((v) => v.type.startsWith('run.')), 'only the events asked for');

  // The refused chat:send starts no run and sends nothing more; the warning is once per period.
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'more' }), { ok: false, error: { code: 'BUDGET_EXCEEDED' } });
  const log = await waitFor(async () => {
    const l = await (await app.api(`/api/webhooks/${hook.id}/deliveries`)).json();
    return l.total === 2 ? l : null;
  });
  t.match(log.items, [
    { event: 'budget.exceeded', status: 'delivered', response_status: 204, attempt: 1 },
    { event: 'budget.warning', status: 'delivered', response_status: 204, attempt: 1 },
  ]);
  t.equal(got.length, 2);
});
