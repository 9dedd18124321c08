import t from 'tap';
import type { Socket as Tcp } from 'node:net';
import type { Socket } from 'socket.io-client';
import { freshDatabaseUrl } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { boot, withModel } from '../helpers/nodes.js';

/**
 * docs/socket-protocol.md: a socket that does not read never holds more than AGENTSVC_SOCKET_BUFFER_BYTES of
 * pending events: past it the server disconnects it, and the client resumes with since_seq (its
 * replay paced to what the socket takes). Long deltas travel in pieces of at most 16 KiB. The
 * service runs as its own process, so the reading client reads while it sends.
 */

type Ev = { name: string; payload: any };
const CHUNK = 'x'.repeat(32 * 1024 - 8);
const TOTAL = 400 * (7 + CHUNK.length) + 64 * 1024;

function recordOn(s: Socket, sid: string): Ev[] {
  const seen: Ev[] = [];
  s.onAny((name, payload) => payload?.session_id === sid && seen.push({ name, payload }));
  return seen;
}
const ended = (seen: Ev[]) => seen.some((e) => e.name === 'chat:end');
const text = (seen: Ev[]) => seen.filter((e) => e.payload.patch_type === 'add_content').map((e) => e.payload.data.text_delta as string);

t.test('a client that stops reading is disconnected past its budget; it resumes by since_seq, nothing lost', async (t) => {
  // About 13 MB of text: past the budget plus what the kernel's socket buffers absorb.
  const { home, env } = await withModel(t, () => ({ text: [...Array.from({ length: 400 }, (_, i) => `${String(i).padStart(6, '0')}:${CHUNK}`), 'y'.repeat(64 * 1024)], delayMs: 5 }));
  const node = await boot(t, { ...env, AGENTSVC_HOME: home, DATABASE_URL: await freshDatabaseUrl(t), AGENTSVC_SOCKET_BUFFER_BYTES: String(1024 * 1024) });
  const sid = (await (await node.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;

  const reader = await node.socket();
  const read = recordOn(reader, sid);
  await reader.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid, since_seq: 0 });
  const stalled = await node.socket();
  const got = recordOn(stalled, sid);
  await stalled.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid, since_seq: 0 });
  let disconnected = '';
  stalled.on('disconnect', (why) => (disconnected = why));
  // The client stops reading its TCP connection: the server's writes pile up behind it.
  const tcp = (stalled.io.engine.transport as unknown as { ws: { _socket: Tcp } }).ws._socket;
  tcp.pause();

  const sender = await node.socket();
  t.equal((await sender.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'flood' })).ok, true);
  await waitFor(() => ended(read) || !reader.connected, { timeoutMs: 60_000, everyMs: 20, what: 'the run, seen by the reader' });
  const deltas = text(read);
  t.equal(deltas.join('').length, TOTAL, 'the reader got the whole text, still connected');
  t.ok(reader.connected);
  t.ok(deltas.every((d) => d.length <= 16 * 1024), `no delta over 16 KiB (longest ${Math.max(...deltas.map((d) => d.length))})`);

  // The stalled client reads again: what the kernel held arrives, then the disconnect.
  tcp.resume();
  await waitFor(() => disconnected, { timeoutMs: 10_000, everyMs: 20, what: 'the stalled client sees it was disconnected' }).catch((e) => t.fail(e.message));
  const last = Math.max(0, ...got.map((e) => e.payload.seq));
  t.ok(!ended(got) && text(got).join('').length < TOTAL / 2, `it was cut well before the end (had ${text(got).join('').length} of ${TOTAL} characters)`);

  // It resumes from its last seq: the replay is paced to its socket, so it is not cut again.
  const again = await node.socket();
  const rest = recordOn(again, sid);
  await again.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid, since_seq: last });
  await waitFor(() => ended(rest) || !again.connected, { timeoutMs: 30_000, everyMs: 20, what: 'the resumed stream' });
  t.ok(again.connected, 'the resumed replay stays within the budget');
  const all = [...got, ...rest];
  t.same(all.map((e) => e.payload.seq), read.map((e) => e.payload.seq), 'before and after the disconnect: every event once');
  t.equal(text(all).join(''), deltas.join(''));
});
