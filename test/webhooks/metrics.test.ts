import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { receiver } from './receiver.js';

// docs/monitoring.md: agentsvc_webhook_deliveries_total{event, outcome} counts each attempt
// (delivered, failed: retried later, given_up); the alert rules read it.

const line = (text: string, labels: string) => new RegExp(`^agentsvc_webhook_deliveries_total\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1];

t.test('each delivery attempt is counted by event and outcome', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_WEBHOOK_ALLOW_PRIVATE: 'true', AGENTSVC_WEBHOOK_RETRY_BASE_MS: '200', AGENTSVC_SCHEDULER_POLL_MS: '100' });
  const rx = await receiver(t, (n) => (n < 2 ? 503 : 204));
  const hook = await (await app.api('/api/webhooks', { method: 'POST', json: { url: rx.url, events: ['run.completed'] } })).json();
  const sid = await createSession(app);
  const w = await watch(app, sid);
  model.script({ text: ['ok'] });
  await request(w.sock, 'chat:send', { session_id: sid, message: 'hi' });
  await untilEnd(w.seen, sid);
  await waitFor(() => rx.got.length === 3, { what: 'two failures and a delivery', timeoutMs: 20_000 });
  const scrape = async () => (await app.api('/metrics', { key: app.adminKey })).text();
  const text = await waitFor(async () => {
    const s = await scrape();
    return line(s, 'event="run.completed",outcome="delivered"') === '1' ? s : null;
  });
  t.equal(line(text, 'event="run.completed",outcome="failed"'), '2');
  t.equal(line(text, 'event="run.completed",outcome="given_up"'), undefined, 'nothing given up');
  await app.api(`/api/webhooks/${hook.id}/test`, { method: 'POST' });
  t.equal(line(await scrape(), 'event="webhook.test",outcome="delivered"'), '1', 'a test delivery counts under its own event');
});
