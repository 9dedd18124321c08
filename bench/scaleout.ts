// Scale-out: the streaming benchmark through the in-process bus and through Redis (same K, N, rate,
// same fake model), and 1,000 idle subscribed sockets spread over two nodes (memory per socket).
// Starts its own embedded PostgreSQL and redis-server. Usage: npx tsx bench/scaleout.ts [K=200] [N=100] [rate/s=50] [sockets=1000]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io, type Socket } from 'socket.io-client';
import { startFakeModel } from '../test/fixtures/fake-model.js';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { startUp } from './lib/up.js';

const K = Number(process.argv[2] ?? 200);
const N = Number(process.argv[3] ?? 100);
const RATE = Number(process.argv[4] ?? 50);
const IDLE = Number(process.argv[5] ?? 1000);
const now = () => performance.timeOrigin + performance.now();
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-scaleout-'));
const pg = await startEmbeddedPostgres(join(tmp, 'pg'), { database: 'postgres' });
const redisPort = await freePort();
const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
for (let i = 0; i < 100 && !spawnSync('redis-cli', ['-p', String(redisPort), 'ping']).stdout?.toString().includes('PONG'); i++) await new Promise((r) => setTimeout(r, 50));
const model = await startFakeModel();
const written = new Map<string, number>();
model.onChunk = (text, at) => written.set(text, at);
let counter = 0;
const reply = () => {
  const id = counter++;
  return { text: Array.from({ length: N }, (_, i) => `s${id}-${i} `), delayMs: 1000 / RATE };
};

let dbN = 0;
async function freshDb(): Promise<string> {
  const name = `bench_${process.pid}_${dbN++}`;
  const pgm = await import('pg');
  const c = new pgm.default.Client({ connectionString: pg.url });
  await c.connect();
  await c.query(`create database ${name}`);
  await c.end();
  const u = new URL(pg.url);
  u.pathname = `/${name}`;
  return u.toString();
}

interface Node {
  child: ChildProcess;
  url: string;
}
async function up(env: Record<string, string>): Promise<Node> {
  const full: NodeJS.ProcessEnv = { ...process.env, OPENAI_BASE_URL: model.baseUrl, AGENTSVC_MODEL: 'fake-model', AGENTSVC_LOG_LEVEL: 'warn', AGENTSVC_MAX_RUNS_PER_USER: String(K + 10) };
  delete full.DATABASE_URL;
  Object.assign(full, env);
  const { child, url } = await startUp(full);
  return { child, url };
}
const stop = (n: Node) =>
  new Promise((r) => {
    n.child.once('exit', r);
    n.child.kill('SIGTERM');
  });
const homes = new Map<Node, string>();
const homeOf = (n: Node) => homes.get(n)!;

function connect(url: string, key: string): Promise<Socket> {
  return new Promise((resolve) => {
    const s = io(url, { auth: { token: key }, transports: ['websocket'] });
    s.once('connect', () => resolve(s));
  });
}

/** K chats sent through `sender`, each streamed to a socket on `watcher`. */
async function stream(sender: Node, watcher: Node, key: string) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const ids = await Promise.all(Array.from({ length: K }, async () => (await (await fetch(`${sender.url}/api/sessions`, { method: 'POST', headers, body: '{}' })).json()).session_id as string));
  const lat: number[] = [];
  let events = 0;
  const watchers = await Promise.all(
    ids.map(async (sid) => {
      const s = await connect(watcher.url, key);
      let end!: () => void;
      const done = new Promise<void>((r) => (end = r));
      s.onAny((name, p) => {
        events++;
        if (name === 'turn:patch' && p.patch_type === 'add_content') lat.push(now() - written.get(p.data.text_delta)!);
        if (name === 'chat:end') end();
      });
      await s.emitWithAck('session:subscribe', { session_id: sid });
      return { sid, s, done };
    }),
  );
  const send = sender === watcher ? null : await connect(sender.url, key);
  written.clear();
  for (let i = 0; i < K; i++) model.script(reply());
  const t0 = now();
  const acks = await Promise.all(watchers.map(({ sid, s }) => (send ?? s).emitWithAck('chat:send', { session_id: sid, message: 'go' })));
  const refused = acks.find((a) => !a.ok);
  if (refused) throw new Error(`chat:send refused: ${JSON.stringify(refused)}`);
  await Promise.all(watchers.map((x) => x.done));
  const seconds = (now() - t0) / 1000;
  for (const w of watchers) w.s.disconnect();
  send?.disconnect();
  return { lat, seconds, events, received: lat.length };
}

async function node(env: Record<string, string>): Promise<Node> {
  const home = mkdtempSync(join(tmp, 'home-'));
  const n = await up({ ...env, AGENTSVC_HOME: home });
  homes.set(n, home);
  return n;
}

const fmt = (x: number) => x.toFixed(2).padStart(8);
const row = (label: string, r: Awaited<ReturnType<typeof stream>>) =>
  console.log(`${label.padEnd(34)} ${fmt(pct(r.lat, 50))} ${fmt(pct(r.lat, 99))} ${(r.events / r.seconds).toFixed(0).padStart(9)}  ${r.received}/${K * N}`);

try {
  const ws = join(tmp, 'workspaces');
  console.log(`K=${K} sessions x N=${N} deltas at ${RATE}/s each (offered ${K * RATE} deltas/s); latency = model chunk written -> client received`);
  console.log(`                                     p50 ms   p99 ms   events/s  add_content`);
  {
    const a = await node({ DATABASE_URL: await freshDb(), AGENTSVC_WORKSPACES: ws });
    row('in-process bus, one node', await stream(a, a, readFileSync(join(homeOf(a), 'admin.key'), 'utf8').trim()));
    await stop(a);
  }
  const db = await freshDb();
  const shared = { DATABASE_URL: db, REDIS_URL: `redis://127.0.0.1:${redisPort}`, AGENTSVC_WORKSPACES: ws };
  const a = await node(shared);
  const b = await node(shared);
  const key = readFileSync(join(homeOf(a), 'admin.key'), 'utf8').trim();
  row('Redis bus, client on the run node', await stream(a, a, key));
  row('Redis bus, client on the other node', await stream(a, b, key));

  // Idle sockets: half on each node, each subscribed to its own session.
  const before = [rssMiB(a.child.pid!), rssMiB(b.child.pid!)];
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const idle: Socket[] = [];
  for (let i = 0; i < IDLE; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, IDLE - i) }, async (_, j) => {
        const target = (i + j) % 2 ? b : a;
        const sid = (await (await fetch(`${a.url}/api/sessions`, { method: 'POST', headers, body: '{}' })).json()).session_id as string;
        const s = await connect(target.url, key);
        await s.emitWithAck('session:subscribe', { session_id: sid });
        return s;
      }),
    );
    idle.push(...batch);
  }
  await new Promise((r) => setTimeout(r, 2000));
  const after = [rssMiB(a.child.pid!), rssMiB(b.child.pid!)];
  const per = ((after[0] - before[0] + after[1] - before[1]) * 1024) / IDLE;
  console.log(`\n${IDLE} idle subscribed sockets over two nodes: node A ${before[0].toFixed(0)} -> ${after[0].toFixed(0)} MiB, node B ${before[1].toFixed(0)} -> ${after[1].toFixed(0)} MiB; ${per.toFixed(1)} KiB per socket`);
  for (const s of idle) s.disconnect();
  await Promise.all([stop(a), stop(b)]);
} finally {
  await model.close();
  redis.kill('SIGTERM');
  await pg.stop();
  rmSync(tmp, { recursive: true, force: true });
}
