import t from 'tap';
import { io as connect, type Socket } from 'socket.io-client';
import { startFakeModel } from '../fixtures/fake-model.js';
import { kill } from '../helpers/cli.js';
import { freePort, redisServerFor, startRedis, twoNodes } from '../helpers/nodes.js';
import { waitFor } from '../helpers/wait.js';
import { oidcEnv, signIn, startProvider } from './oidc.js';

/**
 * Disabling a user reaches every node (docs/identity.md "Admin changes"): two `agentsvc up`
 * processes on one PostgreSQL and one Redis, a person signed in through node A with the provider,
 * their socket open on node B by the same cookie; an admin disables them on node A and the socket on
 * B is cut. The time it takes is printed (three rounds).
 */

t.setTimeout(90_000);

if (redisServerFor('two-node disable test')) {
  t.test('a user disabled on node A loses their open socket on node B', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    const provider = await startProvider(t);
    const { a, b } = await twoNodes(t, model, redisPort, oidcEnv(provider.issuer));
    await provider.setup(a.up.url);

    const times: number[] = [];
    for (let round = 0; round < 3; round++) {
      const jar = await signIn({ url: a.up.url }, 'bob');
      const me = await (await fetch(`${b.up.url}/api/auth/me`, { headers: { cookie: jar.header() } })).json();
      t.equal(me.username, 'bob', 'the sign-in made on A is valid on B (one database)');
      const sock: Socket = connect(b.up.url, { transports: ['websocket'], reconnection: false, forceNew: true, extraHeaders: { cookie: jar.header(), origin: b.up.url } });
      t.teardown(() => sock.disconnect());
      await waitFor(() => sock.connected, { what: "bob's socket on node B" });
      let cutAt = 0;
      let reason = '';
      sock.on('disconnect', (r) => {
        cutAt = performance.now();
        reason = r;
      });
      const started = performance.now();
      const r = await a.api(`/api/admin/users/${me.id}`, { method: 'PATCH', json: { disabled: true } });
      t.same(await r.json(), { id: me.id, username: 'bob', role: 'member', disabled: true });
      await waitFor(() => cutAt > 0, { what: "bob's socket on B to be cut", timeoutMs: 10_000 });
      t.equal(reason, 'io server disconnect', 'the service closed it (not a transport error)');
      times.push(Math.round(cutAt - started));
      t.equal((await fetch(`${b.up.url}/api/auth/me`, { headers: { cookie: jar.header() } })).status, 401, 'the cookie is refused on B too');
      t.equal((await a.api(`/api/admin/users/${me.id}`, { method: 'PATCH', json: { disabled: false } })).status, 200);
    }
    t.comment(`disable on A to socket cut on B: ${times.join(', ')} ms (PATCH sent to disconnect seen)`);
  });
}
