import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { kill } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { freePort, recorder, redisServerFor, startRedis, twoNodes, until } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { receiver } from '../webhooks/receiver.js';

/**
 * A node asks the database for webhooks at a run's end only when someone may have one
 * (src/features/webhooks/subscribers.ts). A webhook created on node A must still be told of a run
 * node B ends right after: A's bus signal reaches B through Redis before B's next run ends.
 */

if (redisServerFor('two-node webhook test')) {
  t.test('a webhook created on node A hears of the next run node B ends', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    model.fallback = () => ({ text: ['done'] });
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    const { a, b } = await twoNodes(t, model, redisPort, { AGENTSVC_WEBHOOK_ALLOW_PRIVATE: 'true' });
    const rx = await receiver(t);
    const sock = await b.socket();
    const run = async () => {
      const sid = (await (await b.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
      const got = recorder(sock, sid);
      await sock.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
      t.equal((await sock.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'hi' })).ok, true);
      await until('chat:end on node B', () => got.some((e) => e.name === 'chat:end'));
      return sid;
    };

    // Before any webhook: B's index says nobody has one.
    await run();
    const res = await a.api('/api/webhooks', { method: 'POST', json: { url: rx.url, events: ['run.completed'] } });
    t.equal(res.status, 201);
    const hook = await res.json();
    const sid = await run();
    await waitFor(() => rx.got.length === 1, { what: "the delivery of node B's run", timeoutMs: 15_000 });
    t.match(new Webhook(hook.secret).verify(rx.got[0].body, rx.got[0].headers), { type: 'run.completed', data: { session_id: sid, status: 'completed' } });

    // Disabled on B, enabled again on A: B's next run is told again.
    t.equal((await b.api(`/api/webhooks/${hook.id}`, { method: 'PATCH', json: { enabled: false } })).status, 200);
    await run();
    t.equal((await a.api(`/api/webhooks/${hook.id}`, { method: 'PATCH', json: { enabled: true } })).status, 200);
    const again = await run();
    await waitFor(() => rx.got.length === 2, { what: 'the delivery after enabling it again', timeoutMs: 15_000 });
    t.match(JSON.parse(rx.got[1].body), { type: 'run.completed', data: { session_id: again } });
  });
}
