import { readFileSync } from 'node:fs';
import type { Socket as Tcp } from 'node:net';
import t from 'tap';
import { freshDatabaseUrl } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { boot, withModel } from '../helpers/nodes.js';

/**
 * The socket budget is per connection, whatever the number of sessions it follows (docs/socket-protocol.md,
 * AGENTSVC_SOCKET_BUFFER_BYTES): one websocket subscribed to several sessions that each stream a long
 * answer, whose client stops reading at the TCP level once its subscribes are acked, is cut while
 * the runs still stream, not after them.
 */
const SESSIONS = 4;
const CHUNK = 'x'.repeat(32 * 1024 - 8);
const PIECES = 128; // 4 MiB per answer

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

t.test('one connection, several streaming sessions, a client that stops reading: cut while they stream', async (t) => {
  const { home, env } = await withModel(t, () => ({ text: Array.from({ length: PIECES }, (_, i) => `${String(i).padStart(6, '0')}:${CHUNK}`), delayMs: 1 }));
  const node = await boot(t, { ...env, AGENTSVC_HOME: home, DATABASE_URL: await freshDatabaseUrl(t), AGENTSVC_SOCKET_BUFFER_BYTES: String(1024 * 1024) });
  const pid = node.up.child.pid!;
  const sids: string[] = [];
  for (let i = 0; i < SESSIONS; i++) sids.push((await (await node.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id);

  const stalled = await node.socket();
  for (const sid of sids) t.equal((await stalled.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid })).ok, true);
  let disconnected = '';
  stalled.on('disconnect', (why) => (disconnected = why));
  const tcp = (stalled.io.engine.transport as unknown as { ws: { _socket: Tcp } }).ws._socket;
  tcp.pause();
  const rss0 = rssOf(pid);

  const t0 = Date.now();
  // The sender starts the runs without following them, and their ends are read over REST: a
  // socket following all four streams (16 MiB) would itself be cut whenever this test's process,
  // loaded, read it too slowly (a CI run failed so).
  const sender = await node.socket();
  for (const sid of sids) t.equal((await sender.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'flood' })).ok, true);
  const statuses = () => Promise.all(sids.map(async (sid) => ((await (await node.api(`/api/sessions/${sid}`)).json()) as { status: string }).status));
  const ended = async () => (await statuses()).every((s) => s === 'completed' || s === 'failed');
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
  await waitFor(ended, { timeoutMs: 120_000, everyMs: 100, what: 'every run ends' }).finally(() => clearInterval(sampler));
  t.same(await statuses(), sids.map(() => 'completed'), 'every run completed, the cut reader notwithstanding');
  const grown = (peak - rss0) / 2 ** 20;
  const { readdirSync } = await import('node:fs');
  const cuts = readdirSync(`${home}/logs`)
    .flatMap((f) => readFileSync(`${home}/logs/${f}`, 'utf8').split('\n'))
    .filter((l) => l.includes('stopped reading'))
    .map((l) => JSON.parse(l) as { time: number; pending_bytes: number });
  t.equal(cuts.length, 1, 'one connection cut, and logged');
  const ran = Date.now() - t0;
  t.comment(`cut ${cuts[0]?.time - t0} ms after the flood began, ${cuts[0]?.pending_bytes} bytes pending; the runs took ${ran} ms; service RSS peak +${grown.toFixed(0)} MiB (all streams, the reader's included)`);
  t.ok(cuts[0] && cuts[0].time - t0 < ran, 'cut while the runs still streamed');
  tcp.resume();
  await waitFor(() => disconnected, { timeoutMs: 10_000, what: 'the stalled client sees it was disconnected' }).catch((e) => t.fail(e.message));
  t.ok(disconnected, `the stalled connection was cut (${disconnected})`);
});
