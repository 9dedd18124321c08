import t from 'tap';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { sendLogged } from '../../src/core/events/sockets.js';

/**
 * What a connection sends in one tick goes out in one TCP write (src/core/events/sockets.ts
 * coalesceWrites): a run's start sends several events at once, and a syscall per event was the
 * largest share of a run start's CPU.
 */

/** Counts the writes that reach the server side of the client's TCP connection. */
type Writer = (...args: unknown[]) => unknown;

function countWrites(app: Awaited<ReturnType<typeof chatFixture>>['app'], clientId: string) {
  const server = app.service.io.sockets.sockets.get(clientId);
  if (!server) throw new Error(`no server socket ${clientId}`);
  const transport = (server.conn as unknown as { transport: { name: string; socket: { _socket: Record<'_write' | '_writev', Writer> } } }).transport;
  if (transport.name !== 'websocket') throw new Error(`expected a websocket transport, got ${transport.name}`);
  const tcp = transport.socket._socket;
  const counted = { writes: 0 };
  for (const m of ['_write', '_writev'] as const) {
    const orig = tcp[m];
    tcp[m] = function (this: unknown, ...args: unknown[]) {
      counted.writes++;
      return orig.apply(this, args);
    };
  }
  return { counted, server };
}

t.test('events emitted in one tick reach the client in one write, in order', async (t) => {
  const { app, sock, sid } = await chatFixture(t);
  const { counted, server } = countWrites(app, sock.id!);
  const got: number[] = [];
  sock.on('system:notice', (p) => got.push((p.data as { i: number }).i));
  for (let i = 0; i < 5; i++) sendLogged(server, { name: 'system:notice', payload: { session_id: sid, seq: 0, code: 'TEST', message: 'm', data: { i } } as never });
  await waitFor(() => got.length === 5, { what: 'the five events' });
  t.same(got, [0, 1, 2, 3, 4], 'all of them, in order');
  t.equal(counted.writes, 1, 'in one write');
});

t.test("a run's events and its ack: fewer writes than events, every event delivered once, in order", async (t) => {
  const { app, model, sock, sid, seen } = await chatFixture(t);
  const { counted } = countWrites(app, sock.id!);
  model.script({ text: ['a', 'b'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'hi' })).ok, true);
  await untilEnd(seen, sid);
  const mine = seen.filter((e) => e.payload.session_id === sid);
  const seqs = mine.map((e) => e.payload.seq);
  t.same(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i), 'seqs rise by one');
  // chat:start, turn:start and turn:end of the user turn go together; so do the last turn:end and chat:end.
  t.ok(counted.writes < mine.length + 1, `${counted.writes} writes for ${mine.length} events and the ack`);
});
