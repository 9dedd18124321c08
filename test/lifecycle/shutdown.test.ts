import t from 'tap';
import { io, type Socket } from 'socket.io-client';
import { startFakeModel } from '../fixtures/fake-model.js';
import { alive, assertFreshBuild, postmasterPid, stop } from '../appliance/cli-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { lockHome } from '../../src/platform/db/home-lock.js';
import { exited, freshHome, slowUpload } from './helpers.js';

// SIGTERM ends `agentsvc up` within AGENTSVC_SHUTDOWN_SECONDS: runs, then sockets, then the
// database; past the limit what is left is stopped hard (docs/operations.md, "Shutdown").
assertFreshBuild();
const { home, dataDir, adminKey, up } = freshHome(t, 'shutdown');

t.test('a shutdown past AGENTSVC_SHUTDOWN_SECONDS stops what is left hard: exit 3, database gone, next up starts', async (t) => {
  const first = await up(t, { AGENTSVC_SHUTDOWN_SECONDS: '3' });
  const pg = postmasterPid(dataDir);
  await slowUpload(t, first.url, adminKey());
  const t0 = Date.now();
  first.child.kill('SIGTERM');
  const code = await exited(first);
  const took = Date.now() - t0;
  t.equal(code, 3, 'exit 3 says it was stopped hard');
  t.ok(took < 3500, `gone within the limit (3 s, 0.5 s for the process to exit): ${took} ms`);
  t.match(first.out(), /agentsvc: stopped hard \(exit 3\): shutdown reached AGENTSVC_SHUTDOWN_SECONDS=3 while closing sockets\n/);
  t.ok(await waitFor(() => !alive(pg), { timeoutMs: 2000, what: 'PostgreSQL gone' }), 'its PostgreSQL was killed with it');
  const next = await up(t);
  t.match(next.out(), /recovered from an embedded PostgreSQL that died without shutting down/, 'the next up recovers the database');
  t.equal((await fetch(`${next.url}/api/auth/me`, { headers: { authorization: `Bearer ${adminKey()}` } })).status, 200, 'data survived');
  t.equal(await stop(next.child, 'SIGTERM'), 0);
});

/** The fields of a chat:end this test reads. */
type Ended = { session_id: string; status: string; finish_reason: string };

t.test('SIGTERM with 50 clients streaming: every run ends interrupted with its chat:end, within the limit', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  // A long, slow answer: each stream would go on for minutes.
  model.fallback = { text: Array.from({ length: 3000 }, (_, i) => `w${i} `), delayMs: 50 };
  const limit = 15;
  const run = await up(t, { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'test', AGENTSVC_MODEL: 'fake-model', AGENTSVC_SHUTDOWN_SECONDS: String(limit) });
  const pg = postmasterPid(dataDir);
  const key = adminKey();
  const clients: { sock: Socket; sid: string; ends: Ended[]; deltas: number }[] = [];
  t.teardown(() => clients.forEach((c) => c.sock.disconnect()));
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${run.url}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}' });
    t.equal(res.status, 200);
    const sid = ((await res.json()) as { session_id: string }).session_id;
    const sock = io(run.url, { auth: { token: key }, transports: ['websocket'], reconnection: false, forceNew: true });
    const c = { sock, sid, ends: [] as Ended[], deltas: 0 };
    sock.on('chat:end', (p) => p.session_id === sid && c.ends.push(p));
    sock.on('turn:patch', (p) => p.session_id === sid && p.patch_type === 'add_content' && c.deltas++);
    clients.push(c);
  }
  await Promise.all(
    clients.map(async (c) => {
      if (!c.sock.connected) await new Promise<void>((r) => c.sock.once('connect', () => r()));
      t.equal((await c.sock.timeout(20_000).emitWithAck('session:subscribe', { session_id: c.sid })).ok, true);
      t.equal((await c.sock.timeout(20_000).emitWithAck('chat:send', { session_id: c.sid, message: 'talk for a while' })).ok, true);
    }),
  );
  await waitFor(() => clients.every((c) => c.deltas >= 2), { timeoutMs: 60_000, what: 'all 50 streaming' });

  const t0 = Date.now();
  run.child.kill('SIGTERM');
  const code = await exited(run);
  const took = Date.now() - t0;
  t.equal(code, 0, 'a clean stop: exit 0');
  t.ok(took < limit * 1000, `within AGENTSVC_SHUTDOWN_SECONDS=${limit}: ${took} ms`);
  t.same(
    clients.map((c) => c.ends.map((e) => [e.status, e.finish_reason])),
    clients.map(() => [['interrupted', 'interrupted']]),
    'each of the 50 got one chat:end, interrupted',
  );
  t.notOk(alive(pg), 'the database stopped');
  const lock = await lockHome(home, 0);
  t.pass('the lock is free');
  lock.release();
  t.comment(`SIGTERM with 50 streaming clients: exit after ${took} ms`);
});
