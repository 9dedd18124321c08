import t from 'tap';
import { buildWithModel, record, subscribe, untilEnd } from '../helpers/chat.js';
import { kill } from '../helpers/cli.js';
import { boot, freePort, modelEnv, recorder, redisServerFor, socketTo, startRedis, tempHome, until } from '../helpers/nodes.js';
import { request } from '../helpers/socket.js';
import { teamWorkspaceSession } from '../helpers/team-workspace.js';
import { waitFor } from '../helpers/wait.js';

/**
 * docs/identity.md "When read access goes", across nodes (docs/scale-out.md): a member removed from
 * a team workspace through node A loses the subscription their socket holds on node B. Node A runs in
 * this process, node B is a real `agentsvc up` on the same PostgreSQL and Redis; the removal travels
 * on the database's revocation channel, the session's events on Redis.
 */

t.setTimeout(60_000);

if (redisServerFor('the two-node read access test')) {
  t.test('removal through node A ends the subscription on node B; a subscriber on B who stays goes on', async (t) => {
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    const REDIS_URL = `redis://127.0.0.1:${redisPort}`;
    const { app, model } = await buildWithModel(t, { REDIS_URL });
    const [alice, bob] = await Promise.all(['alice', 'bob'].map((n) => app.newUser(n)));
    const { ws, sid: team } = await teamWorkspaceSession(app, alice, [bob]);

    const b = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: tempHome(t), DATABASE_URL: app.config.databaseUrl as string, REDIS_URL }, bob.key);
    t.comment(`node B listening after ${b.up.startMs} ms`);
    const bobOnB = await socketTo(t, b.up.url, bob.key);
    const aliceOnB = await socketTo(t, b.up.url, alice.key);
    const [bobSeen, aliceSeenB] = [recorder(bobOnB, team), recorder(aliceOnB, team)];
    for (const s of [bobOnB, aliceOnB]) t.same(await s.timeout(10_000).emitWithAck('session:subscribe', { session_id: team }), { ok: true, session_id: team });

    const aliceOnA = app.socket(alice.key);
    const aliceSeen = record(aliceOnA);
    await waitFor(() => aliceOnA.connected, { what: "alice's socket on A" });
    await subscribe(aliceOnA, team);
    const chat = async (message: string, count: number) => {
      t.match(await request(aliceOnA, 'chat:send', { session_id: team, message }), { ok: true });
      await untilEnd(aliceSeen, team, 20_000, count);
      await until(`chat:end ${count} on B (alice)`, () => aliceSeenB.filter((e) => e.name === 'chat:end').length === count);
    };
    await chat('first', 1);
    await until('the first chat on B (bob)', () => bobSeen.some((e) => e.name === 'chat:end'));

    t.equal((await app.api(`/api/prod_workspaces/${ws}/members/${bob.userId}`, { method: 'DELETE', key: alice.key })).status, 200, 'alice removes bob through A');
    await until("session:closed on bob's socket on B", () => bobSeen.some((e) => e.name === 'session:closed'));
    t.same(bobSeen.find((e) => e.name === 'session:closed')?.payload, { session_id: team, code: 'NOT_FOUND', message: 'session not found' });
    await chat('second', 2);
    const closedAt = bobSeen.findIndex((e) => e.name === 'session:closed');
    t.same(bobSeen.slice(closedAt + 1).map((e) => e.name), [], 'bob on B: nothing of the session after session:closed');
    t.ok(bobOnB.connected, "bob's socket on B stays connected");
    t.notOk(aliceSeenB.some((e) => e.name === 'session:closed'), "alice's subscription on B goes on");
  });
}
