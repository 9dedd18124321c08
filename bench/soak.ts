// Soak (docs/operations.md): `agentsvc up` (embedded PostgreSQL) and the streaming bench's fake
// model, each in its own process; S sessions, each with its own socket, chat back to back for a set
// time, every chat a Write tool call and then D text deltas. Every `every` minutes: the service's RSS
// and live JS memory after a full GC (through its inspector), the event-loop delay p99 over the
// interval (its /metrics), the sessions stuck (a chat sent and no event of it for 60 s), and events
// lost or repeated (each session's events must come with seq one more than the last).
// The flat line to look for: RSS after GC and live memory not rising from one interval to the next.
// `context=N` gives the model a context window of N tokens: automatic compaction then bounds each
// session's history, as it does in service, and what a run reads and holds stops growing with the
// session (TurnStore.modelTurns). Without it (128,000) the histories grow for the whole soak.
// Usage: npx tsx bench/soak.ts [minutes=20] [sessions=200] [every=2] [deltas=20] [interval=10] [context=128000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io, type Socket } from 'socket.io-client';
import { startInspected } from './lib/inspected.js';
import { settled, stop } from './streaming/procs.js';

const opt = Object.fromEntries(process.argv.slice(2).map((x) => x.split('=') as [string, string]));
const MINUTES = Number(opt.minutes ?? 20);
const SESSIONS = Number(opt.sessions ?? 200);
const EVERY = Number(opt.every ?? 2);
const DELTAS = Number(opt.deltas ?? 20);
const INTERVAL = Number(opt.interval ?? 10);
const CONTEXT = opt.context ?? '128000';
const STUCK_MS = 60_000;
const METRICS_TOKEN = 'soak-metrics-token-0123456789';
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-soak-'));
const procs: import('node:child_process').ChildProcess[] = [];
const tally = { chats: 0, failed: 0, lost: 0, repeated: 0 };

/** One session: its socket checks seq continuity and says when its chat last heard anything. */
async function session(url: string, token: string, i: number) {
  const r = await fetch(`${url}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
  if (!r.ok) throw new Error(`POST /api/sessions: ${r.status} ${await r.text()}`);
  const sid = ((await r.json()) as { session_id: string }).session_id;
  const sock: Socket = io(url, { auth: { token }, transports: ['websocket'], reconnection: false });
  await new Promise<void>((res, rej) => sock.once('connect', () => res()).once('connect_error', rej));
  const s = { sid, lastSeq: 0, heard: Date.now(), waiting: false, ended: null as ((status: string) => void) | null };
  sock.onAny((_name: string, p: { session_id?: string; seq?: number }) => {
    if (p?.session_id !== sid || typeof p.seq !== 'number') return;
    s.heard = Date.now();
    if (p.seq <= s.lastSeq) tally.repeated++;
    else if (s.lastSeq && p.seq > s.lastSeq + 1) tally.lost += p.seq - s.lastSeq - 1;
    s.lastSeq = Math.max(s.lastSeq, p.seq);
  });
  sock.on('chat:end', (p: { session_id: string; status: string }) => p.session_id === sid && s.ended?.(p.status));
  const sub = await sock.emitWithAck('session:subscribe', { session_id: sid, since_seq: 0 });
  if (!sub.ok) throw new Error(`session:subscribe: ${JSON.stringify(sub)}`);
  return {
    s,
    sock,
    async chat(n: number): Promise<void> {
      const end = new Promise<string>((res) => (s.ended = res));
      s.waiting = true;
      s.heard = Date.now();
      const ack = await sock.emitWithAck('chat:send', { session_id: sid, message: `soak ${DELTAS} ${INTERVAL} s${i}n${n}` });
      const status = ack.ok ? await end : `ack ${ack.error?.code}`;
      s.waiting = false;
      tally.chats++;
      if (status !== 'completed') tally.failed++;
    },
  };
}

try {
  const { srv, url, token } = await startInspected(join(tmp, 'home'), procs, { AGENTSVC_METRICS_TOKEN: METRICS_TOKEN, AGENTSVC_CONTEXT_WINDOW: CONTEXT });
  const lagP99 = async () => {
    const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    return Number(/^agentsvc_nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(text)?.[1] ?? Number.NaN) * 1000;
  };
  const sessions: Awaited<ReturnType<typeof session>>[] = [];
  for (let i = 0; i < SESSIONS; i++) sessions.push(await session(url, token, i));
  console.log(`${SESSIONS} sessions chatting back to back for ${MINUTES} min (a Write call, then ${DELTAS} deltas ${INTERVAL} ms apart; context window ${CONTEXT} tokens); every ${EVERY} min:`);
  console.log('minute   chats  failed  RSS after GC  live JS  loop p99  stuck  lost  repeated');
  const row = async (at: string) => {
    // The delay first: the full GC that `settled` forces would be counted in it.
    const p99 = await lagP99();
    const stuck = sessions.filter((x) => x.s.waiting && Date.now() - x.s.heard > STUCK_MS).length;
    const m = await settled(srv);
    console.log(
      `${at.padStart(6)} ${String(tally.chats).padStart(7)} ${String(tally.failed).padStart(7)} ${m.rss.toFixed(0).padStart(9)} MiB ${m.live.toFixed(1).padStart(6)} MiB ${p99.toFixed(1).padStart(6)} ms ${String(stuck).padStart(6)} ${String(tally.lost).padStart(5)} ${String(tally.repeated).padStart(9)}`,
    );
    return m;
  };
  const first = await row('0');
  const t0 = Date.now();
  const stopAt = t0 + MINUTES * 60_000;
  let running = true;
  const loops = sessions.map(async (x) => {
    for (let n = 0; running && Date.now() < stopAt; n++) await x.chat(n);
  });
  const rows = [first];
  for (let k = 1; k * EVERY <= MINUTES; k++) {
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + k * EVERY * 60_000 - Date.now())));
    rows.push(await row(String(k * EVERY)));
  }
  // From the first interval (warm: JIT, pools, caches) to the last.
  const warm = rows[Math.min(1, rows.length - 1)];
  const last = rows.at(-1)!;
  running = false;
  await Promise.all(loops);
  for (const x of sessions) x.sock.disconnect();
  console.log(
    `from the first interval to the last: RSS after GC ${warm.rss.toFixed(0)} -> ${last.rss.toFixed(0)} MiB (${(last.rss / warm.rss).toFixed(2)}x), live ${warm.live.toFixed(1)} -> ${last.live.toFixed(1)} MiB; ${tally.chats} chats, ${tally.failed} not completed, ${tally.lost} events lost, ${tally.repeated} repeated`,
  );
} finally {
  for (const p of procs.reverse()) await stop(p);
  rmSync(tmp, { recursive: true, force: true });
}
