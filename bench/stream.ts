// Streaming throughput and added latency: the fake model streams N text deltas to K concurrent
// sessions; we measure delivered events/s and the latency from the model server writing a chunk
// to the Socket.IO client receiving its add_content. The floor is the same stream read directly
// by the openai SDK in this process. Usage: npx tsx bench/stream.ts [K=200] [N=100] [rate/s=50]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { io } from 'socket.io-client';
import { startFakeModel } from '../test/fixtures/fake-model.js';

const K = Number(process.argv[2] ?? 200);
const N = Number(process.argv[3] ?? 100);
const RATE = Number(process.argv[4] ?? 50);
const now = () => performance.timeOrigin + performance.now();
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const model = await startFakeModel();
const written = new Map<string, number>();
model.onChunk = (text, at) => written.set(text, at);
let counter = 0;
model.fallback = undefined as never;
const reply = () => {
  const id = counter++;
  return { text: Array.from({ length: N }, (_, i) => `s${id}-${i} `), delayMs: 1000 / RATE };
};

// Floor: K concurrent SDK streams in one process.
async function floor() {
  written.clear();
  const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'x' });
  const lat: number[] = [];
  const t0 = now();
  await Promise.all(
    Array.from({ length: K }, async () => {
      model.script(reply());
      const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }], stream: true });
      for await (const c of stream) {
        const text = c.choices[0]?.delta?.content;
        if (text) lat.push(now() - written.get(text)!);
      }
    }),
  );
  return { lat, seconds: (now() - t0) / 1000, events: lat.length };
}

async function service() {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-bench-'));
  const env: NodeJS.ProcessEnv = { ...process.env, AGENTSVC_HOME: home, OPENAI_BASE_URL: model.baseUrl, AGENTSVC_MODEL: 'fake-model', AGENTSVC_LOG_LEVEL: 'warn', AGENTSVC_MAX_RUNS_PER_USER: String(K + 10) };
  delete env.DATABASE_URL;
  const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
  const child = spawn(process.execPath, [...nodeArgs, join(import.meta.dirname, '..', 'bin', 'run.js'), 'up', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout!.on('data', (c) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
  });
  const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const ids = await Promise.all(Array.from({ length: K }, async () => (await (await fetch(`${url}/api/sessions`, { method: 'POST', headers, body: '{}' })).json()).session_id as string));
  const lat: number[] = [];
  let events = 0;
  const sockets = await Promise.all(
    ids.map(
      (sid) =>
        new Promise<{ sid: string; s: ReturnType<typeof io>; done: Promise<void> }>((resolve) => {
          const s = io(url, { auth: { token: key }, transports: ['websocket'] });
          let end!: () => void;
          const done = new Promise<void>((r) => (end = r));
          s.onAny((name, p) => {
            events++;
            if (name === 'turn:patch' && p.patch_type === 'add_content') lat.push(now() - written.get(p.data.text_delta)!);
            if (name === 'chat:end') end();
          });
          s.on('connect', async () => {
            await s.emitWithAck('session:subscribe', { session_id: sid });
            resolve({ sid, s, done });
          });
        }),
    ),
  );
  written.clear();
  for (let i = 0; i < K; i++) model.script(reply());
  const t0 = now();
  await Promise.all(sockets.map(({ sid, s }) => s.emitWithAck('chat:send', { session_id: sid, message: 'go' })));
  await Promise.all(sockets.map((x) => x.done));
  const seconds = (now() - t0) / 1000;
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
  sockets.forEach((x) => x.s.disconnect());
  await new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); });
  rmSync(home, { recursive: true, force: true });
  return { lat, seconds, events, rss };
}

const f = await floor();
const s = await service();
const fmt = (x: number) => x.toFixed(2).padStart(8);
console.log(`K=${K} sessions x N=${N} deltas at ${RATE}/s each (offered ${K * RATE} deltas/s)`);
console.log(`                      p50 ms   p99 ms   events/s`);
console.log(`openai SDK direct   ${fmt(pct(f.lat, 50))} ${fmt(pct(f.lat, 99))} ${(f.events / f.seconds).toFixed(0).padStart(9)}`);
console.log(`through agentsvc    ${fmt(pct(s.lat, 50))} ${fmt(pct(s.lat, 99))} ${(s.events / s.seconds).toFixed(0).padStart(9)}  (all events; ${s.lat.length} add_content received of ${K * N})`);
console.log(`added by the service: p50 ${(pct(s.lat, 50) - pct(f.lat, 50)).toFixed(2)} ms, p99 ${(pct(s.lat, 99) - pct(f.lat, 99)).toFixed(2)} ms; p50 ratio ${(pct(s.lat, 50) / pct(f.lat, 50)).toFixed(2)}x`);
console.log(`service RSS after the run: ${s.rss.toFixed(0)} MiB`);
await model.close();
