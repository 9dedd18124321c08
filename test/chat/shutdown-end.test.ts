import t from 'tap';
import { buildWithModel, createSession, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/**
 * docs/operations.md: a shutdown during a run ends it `interrupted`, and the clients watching it receive
 * that chat:end before their sockets close. The close order used to be kept by array surgery
 * (`closers.splice(1, 0, ...)` after later `unshift`s), which put the sockets' close before the
 * runs' end.
 */
t.test('a shutdown during a run sends chat:end interrupted before the sockets close', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ hang: true });
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  const order: string[] = [];
  sock.on('chat:end', (p: { status: string }) => order.push(`chat:end ${p.status}`));
  sock.on('disconnect', () => order.push('disconnect'));
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'x' })).ok, true);
  await waitFor(() => seen.some((e) => e.name === 'turn:start' && e.payload.role === 'assistant'), { what: "the assistant's turn:start" });
  await app.service.close(); // what SIGTERM does (src/cli/commands/up.ts)
  t.same(order.slice(0, 2), ['chat:end interrupted', 'disconnect']);
});
