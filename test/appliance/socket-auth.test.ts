import t from 'tap';
import { next as once } from '../helpers/socket.js';
import { io as connect } from 'socket.io-client';
import { build } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

t.test('Socket.IO handshake checks auth.token; deleting a key disconnects its sockets', async (t) => {
  const app = await build(t);

  for (const token of [undefined, '', 42, 'sk-agentsvc-v2-nope']) {
    const s = connect(app.url, { auth: token === undefined ? {} : { token }, transports: ['websocket'], reconnection: false, forceNew: true });
    t.teardown(() => s.disconnect());
    const [err] = await once(s, 'connect_error');
    t.match(err.message, /unauthorized/, `token ${JSON.stringify(token)}`);
  }

  const created = await (await app.api('/api/user/api-keys/', { method: 'POST', json: { name: 'sock' } })).json();
  const s1 = app.socket(created.plaintext);
  const s2 = app.socket(created.plaintext);
  const other = app.socket();
  await Promise.all([once(s1, 'connect'), once(s2, 'connect'), once(other, 'connect')]);
  const gone = Promise.all([once(s1, 'disconnect'), once(s2, 'disconnect')]);
  t.equal((await app.api(`/api/user/api-keys/${created.key.id}`, { method: 'DELETE' })).status, 204);
  const reasons = await gone;
  t.same(reasons.map((r) => r[0]), ['io server disconnect', 'io server disconnect']);
  t.ok(other.connected, 'sockets of other keys stay');

  // A deletion by another process (the CLI) is announced through PostgreSQL and acts the same.
  const k2 = await app.service.users.createKey((await app.service.users.findUser('admin'))!.id, 'cli');
  const s3 = app.socket(k2.plaintext);
  await once(s3, 'connect');
  const { UserService } = await import('../../src/features/users/service.js');
  const { openDatabase } = await import('../../src/platform/db/index.js');
  const db2 = await openDatabase(app.config);
  t.teardown(() => db2.close());
  const cli = new UserService(db2.em);
  const dropped = once(s3, 'disconnect');
  await cli.deleteKey((await app.service.users.findUser('admin'))!.id, k2.key.id);
  t.equal((await dropped)[0], 'io server disconnect');
});

t.test('revocation survives a lost listener connection (pg_terminate_backend)', async (t) => {
  const app = await build(t);
  const admin = (await app.service.users.findUser('admin'))!;
  const terminate = async () => {
    const rows = await app.service.db
      .em()
      .getConnection()
      .execute<{ pid: number; ok: boolean }[]>(
        // The listener's backend: its last statement is its LISTEN (one already terminated may
        // still be listed while it exits).
        "select pid, pg_terminate_backend(pid) as ok from pg_stat_activity where query ilike 'listen %' and datname = current_database() and not (pid = any(?::int[]))",
        [`{${killed.join(',')}}`],
      );
    t.equal(rows.length, 1, 'found the listener backend');
    killed.push(...rows.map((r) => r.pid));
  };
  // A listener backend other than the ones terminated so far: the listener is back.
  const killed: number[] = [];
  const listening = async () =>
    (
      await app.service.db
        .em()
        .getConnection()
        .execute<{ pid: number }[]>("select pid from pg_stat_activity where query ilike 'listen %' and datname = current_database() and state = 'idle'")
    ).some((r) => !killed.includes(r.pid));

  // Deleted right after the blip, possibly before the listener is back: caught by the resync.
  const k1 = await app.service.users.createKey(admin.id, 'blip-1');
  const s1 = app.socket(k1.plaintext);
  await once(s1, 'connect');
  await terminate();
  const gone1 = once(s1, 'disconnect', 15_000);
  t.equal((await app.api(`/api/user/api-keys/${k1.key.id}`, { method: 'DELETE' })).status, 204);
  t.equal((await gone1)[0], 'io server disconnect', 'deleted during the outage');

  // Deleted well after the blip: the new connection LISTENs again.
  await waitFor(listening, { timeoutMs: 15_000, what: 'the listener to LISTEN again' });
  const k2 = await app.service.users.createKey(admin.id, 'blip-2');
  const s2 = app.socket(k2.plaintext);
  await once(s2, 'connect');
  const gone2 = once(s2, 'disconnect', 15_000);
  t.equal((await app.api(`/api/user/api-keys/${k2.key.id}`, { method: 'DELETE' })).status, 204);
  t.equal((await gone2)[0], 'io server disconnect', 'deleted after reconnecting');

  // And again: a second blip is handled like the first.
  await terminate();
  await waitFor(listening, { timeoutMs: 15_000, what: 'the listener to LISTEN again' });
  const k3 = await app.service.users.createKey(admin.id, 'blip-3');
  const s3 = app.socket(k3.plaintext);
  await once(s3, 'connect');
  const gone3 = once(s3, 'disconnect', 15_000);
  await app.service.users.deleteKey(admin.id, k3.key.id);
  t.equal((await gone3)[0], 'io server disconnect', 'after a second blip');
});
