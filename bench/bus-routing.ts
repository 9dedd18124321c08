// Redis bytes each node receives, with per-session channels (what the service does) side by side
// with the broadcast baseline of before (every node receives every session's events: emulated by
// every node following every session), at 1 and 3 nodes. Real Redis (its own redis-server), the
// service's RedisBus. Usage: npx tsx bench/bus-routing.ts [sessions=60] [events=300] [bytes=200]
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { RedisBus } from '../src/platform/infra/redis-bus.js';
import type { Following } from '../src/platform/infra/event-bus.js';

const arg = (k: string, d: number) => Number(process.argv.find((a) => a.startsWith(`${k}=`))?.split('=')[1] ?? d);
const SESSIONS = arg('sessions', 60);
const EVENTS = arg('events', 300);
const BYTES = arg('bytes', 200);

const port = await new Promise<number>((r) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => r(p));
  });
});
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
for (let i = 0; i < 100 && !spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG'); i++) await new Promise((r) => setTimeout(r, 50));
const url = `redis://127.0.0.1:${port}`;

/**
 * `nodes` nodes; session i runs on node i % nodes and is watched by one socket on node (i + 1) %
 * nodes (a client on another node than its run, the case that needs Redis at all; with one node
 * both are the same). `broadcast`: every node follows every session (the old single channel).
 */
async function scenario(nodes: number, broadcast: boolean) {
  const bus = await Promise.all(Array.from({ length: nodes }, async () => {
    const b = new RedisBus(url);
    await b.connected();
    return b;
  }));
  const got = bus.map(() => 0);
  bus.forEach((b, n) => b.subscribe(() => void got[n]++));
  const follows: Following[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const watchers = broadcast ? bus : [bus[(i + 1) % nodes]];
    for (const b of watchers) follows.push(b.follow(`sess_${i}`));
  }
  await Promise.all(follows.map((f) => f.ready));
  const text = 'x'.repeat(BYTES);
  const t0 = performance.now();
  for (let e = 1; e <= EVENTS; e++) {
    for (let i = 0; i < SESSIONS; i++) bus[i % nodes].publish({ name: 'turn:patch', payload: { session_id: `sess_${i}`, seq: e, data: { text_delta: text } } });
    if (e % 50 === 0) await new Promise((r) => setImmediate(r));
  }
  // Each watching node ends with every event of the sessions it watches (its own runs' locally).
  const want = bus.map((_, n) => Array.from({ length: SESSIONS }, (_, i) => i).filter((i) => i % nodes === n || (broadcast ? true : (i + 1) % nodes === n)).length * EVENTS);
  while (got.some((g, n) => g < want[n]) && performance.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 20));
  const ms = performance.now() - t0;
  // Then until Redis has nothing more in flight (a node's own events come back to it too).
  for (let last = -1, total = 0; total !== last; ) {
    last = total;
    await new Promise((r) => setTimeout(r, 250));
    total = bus.reduce((a, b) => a + b.receivedBytes, 0);
  }
  const rx = bus.map((b) => b.receivedBytes);
  for (const f of follows) f.stop();
  await Promise.all(bus.map((b) => b.close()));
  return { rx, ms, delivered: got.every((g, n) => g >= want[n]) };
}

const mib = (b: number) => (b / 1048576).toFixed(2);
console.log(`${SESSIONS} sessions x ${EVENTS} events of ${BYTES} B of text; each session watched by one socket on another node than its run`);
console.log('nodes  routing              received per node (MiB)           total MiB   ms    all delivered');
for (const nodes of [1, 3]) {
  for (const broadcast of [true, false]) {
    const r = await scenario(nodes, broadcast);
    const per = r.rx.map(mib).join(' / ');
    console.log(`${String(nodes).padEnd(6)} ${(broadcast ? 'broadcast (before)' : 'per session (now)').padEnd(20)} ${per.padEnd(33)} ${mib(r.rx.reduce((a, b) => a + b, 0)).padStart(9)} ${r.ms.toFixed(0).padStart(5)}  ${r.delivered}`);
  }
}
redis.kill('SIGTERM');
