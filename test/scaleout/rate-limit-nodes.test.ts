import t from 'tap';
import { kill } from '../helpers/cli.js';
import { freePort, redisServerFor, startRedis, twoNodes } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';

/**
 * The per-user REST limit (AGENTSVC_RATE_LIMIT_PER_MINUTE) holds across nodes: with REDIS_URL both
 * `agentsvc up` processes count in Redis, so a user who spreads requests over two nodes gets the
 * minute's allowance once, not once per node.
 */


if (redisServerFor('two-node rate-limit test')) {
  t.test('20 requests a minute for one user, counted once over two nodes', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    const { a, b } = await twoNodes(t, model, redisPort, { AGENTSVC_RATE_LIMIT_PER_MINUTE: '20' });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await (i % 2 ? b : a).api('/api/auth/me');
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    t.same(statuses, [...Array(20).fill(200), ...Array(10).fill(429)], 'A and B share one allowance');
    const refused = await b.api('/api/auth/me');
    t.equal(refused.status, 429);
    t.match(await refused.json(), { code: 'RATE_LIMITED' });
    t.ok(Number(refused.headers.get('retry-after')) >= 1, 'with Retry-After');
    t.equal((await a.api('/api/health', { key: null })).status, 200, 'public routes are not counted');
  });
}
