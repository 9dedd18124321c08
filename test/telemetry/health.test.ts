import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/**
 * /api/health reports the runner and each model's last known state (issue 30), taken from the
 * calls runs made: a probe never calls a model, and a failing model shows as `degraded` (200).
 */
t.setTimeout(120_000);

t.test('a model that failed is down in /api/health until a call answers again', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_RETRIES: '0' });
  const health = async () => (await app.api('/api/health', { key: null })).json() as Promise<{ status: string; checks: Record<string, string> }>;
  t.same(await health(), { status: 'ok', checks: { database: 'ok', runner: 'ok' } }, 'no model listed before any call');
  const calls = model.timeline.length;
  await health();
  t.equal(model.timeline.length, calls, 'a probe calls no model');

  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  model.fallback = () => ({ status: 500 });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'hi' })).ok, true);
  await untilEnd(seen, sid, 60_000);
  t.match(await health(), { status: 'degraded', checks: { database: 'ok', 'model:fake-model': 'down' } }, 'down after a failed call');
  t.equal((await app.api('/api/health', { key: null })).status, 200, 'degraded is still 200');

  model.fallback = () => ({ text: ['back'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'again' })).ok, true);
  await untilEnd(seen, sid, 60_000, 2);
  t.same(await health(), { status: 'ok', checks: { database: 'ok', runner: 'ok', 'model:fake-model': 'ok' } }, 'ok once a call answered');
});
