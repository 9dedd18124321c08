// Memory after load (issue 26: "RSS after the back-to-back run stayed at 462 MB idle, from 207 MB:
// find out whether that is a leak"). `agentsvc up` (embedded PostgreSQL) and the streaming bench's
// fake model, each in its own process; C clients, each with its own session and socket, send chats
// back to back (the next one the moment chat:end arrives) until `chats` have run. The service's RSS
// and live JS memory (heap in use + external) after a full GC, through its inspector, are read at
// the start, after a warm-up of one chat per client (JIT, connection pools, first-use caches), after
// every 1,000 chats and once more after 5 s idle. Goal: RSS after GC back within 20% of the warm
// start, and live memory not rising from one thousand to the next.
// Usage: npx tsx bench/memory.ts [chats=5000] [clients=50] [deltas=20]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io, type Socket } from 'socket.io-client';
import { startInspected } from './lib/inspected.js';
import { settled, stop } from './streaming/procs.js';

const opt = Object.fromEntries(process.argv.slice(2).map((x) => x.split('=') as [string, string]));
const CHATS = Number(opt.chats ?? 5000);
const CLIENTS = Number(opt.clients ?? 50);
const DELTAS = Number(opt.deltas ?? 20);
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-memory-'));
const procs: import('node:child_process').ChildProcess[] = [];

/** One client: its own session and socket; `next()` sends a chat and settles on its chat:end. */
async function client(url: string, token: string) {
  const r = await fetch(`${url}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
  if (!r.ok) throw new Error(`POST /api/sessions: ${r.status} ${await r.text()}`);
  const sid = ((await r.json()) as { session_id: string }).session_id;
  const sock: Socket = io(url, { auth: { token }, transports: ['websocket'], reconnection: false });
  await new Promise<void>((res, rej) => sock.once('connect', () => res()).once('connect_error', rej));
  const sub = await sock.emitWithAck('session:subscribe', { session_id: sid });
  if (!sub.ok) throw new Error(`session:subscribe: ${JSON.stringify(sub)}`);
  let ended: ((status: string) => void) | null = null;
  sock.on('chat:end', (p: { status: string }) => ended?.(p.status));
  return {
    sock,
    async next(i: number): Promise<string> {
      const end = new Promise<string>((res) => (ended = res));
      const ack = await sock.emitWithAck('chat:send', { session_id: sid, message: `bench ${DELTAS} 0 c${i}` });
      if (!ack.ok) return `ack ${ack.error?.code}`;
      return end;
    },
  };
}

try {
  const { srv, url, token } = await startInspected(join(tmp, 'home'), procs);
  const rows: { at: string; rss: number; anon: number; live: number; heapTotal: number }[] = [];
  const read = async (at: string) => {
    const m = await settled(srv);
    rows.push({ at, ...m });
    console.log(`${at.padEnd(22)} RSS ${m.rss.toFixed(0).padStart(5)} MiB (anonymous ${m.anon.toFixed(0).padStart(4)})   live ${m.live.toFixed(1).padStart(6)} MiB   JS heap kept ${m.heapTotal.toFixed(1).padStart(6)} MiB`);
  };
  console.log(`${CLIENTS} clients, back-to-back chats of ${DELTAS} deltas; memory after a full GC:`);
  await read('started');
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => client(url, token)));
  const problems = new Map<string, number>();
  let done = 0;
  const count = (status: string) => {
    done++;
    if (status !== 'completed') problems.set(status, (problems.get(status) ?? 0) + 1);
  };
  for (const [i, c] of clients.entries()) count(await c.next(i));
  await read(`warm (${done} chats)`);
  const t0 = Date.now();
  for (let mark = 1000; done < CHATS; mark += 1000) {
    const until = Math.min(mark, CHATS);
    await Promise.all(
      clients.map(async (c, i) => {
        while (done < until) count(await c.next(i));
      }),
    );
    await read(`after ${done} chats`);
  }
  const seconds = (Date.now() - t0) / 1000;
  for (const c of clients) c.sock.disconnect();
  await new Promise((r) => setTimeout(r, 5000));
  await read('idle 5 s, sockets gone');
  const warm = rows[1];
  const last = rows.at(-1)!;
  const ratio = last.rss / warm.rss;
  console.log(`${done} chats in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(0)}/s); not completed: ${problems.size ? JSON.stringify(Object.fromEntries(problems)) : 'none'}`);
  console.log(`goal: ${ratio <= 1.2 ? 'ok' : 'MISS'} RSS after GC ${last.rss.toFixed(0)} MiB = ${ratio.toFixed(2)}x the warm start (<= 1.2); live ${warm.live.toFixed(1)} -> ${last.live.toFixed(1)} MiB`);
} finally {
  for (const p of procs.reverse()) await stop(p);
  rmSync(tmp, { recursive: true, force: true });
}
