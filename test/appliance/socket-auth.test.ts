import t from 'tap';
import { next as once } from '../helpers/socket.js';
import { io as connect } from 'socket.io-client';
import { build } from '../helpers/app.js';

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
  const { UserService } = await import('../../src/users/service.js');
  const { openDatabase } = await import('../../src/db/index.js');
  const db2 = await openDatabase(app.config);
  t.teardown(() => db2.close());
  const cli = new UserService(db2.em);
  const dropped = once(s3, 'disconnect');
  await cli.deleteKey((await app.service.users.findUser('admin'))!.id, k2.key.id);
  t.equal((await dropped)[0], 'io server disconnect');
});
