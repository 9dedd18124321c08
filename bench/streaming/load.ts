// The streaming bench's load generator, in its own process (never the server's). Argument: one JSON
// object {url, token?, mode: 'stream' | 'idle', k, n, intervalMs, timeoutMs?}.
// stream: K sockets, each subscribed to its own session, send chat:send at once; every text delta
// carries the time the model wrote it, so latency = received - written, per delta even when several
// arrive in one event. Checks that each session got its N deltas in order and that seq rose by
// exactly 1 per event. Prints one JSON line of figures.
// idle: creates K sessions, prints {"created": true}, 2 s later connects K sockets each subscribed to
// one of them, prints {"ready": true}, disconnects on SIGTERM.
import { io, type Socket } from 'socket.io-client';

interface Args {
  url: string;
  token?: string;
  mode: 'stream' | 'idle';
  k: number;
  n: number;
  intervalMs: number;
  timeoutMs?: number;
}
const a = JSON.parse(process.argv[2]) as Args;
const clock = () => performance.timeOrigin + performance.now();
const pct = (xs: Float64Array | number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
};

async function sessionIds(k: number): Promise<string[]> {
  if (!a.token) return Array.from({ length: k }, (_, i) => `sess_${process.pid}_${i}`);
  const headers = { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' };
  const ids: string[] = [];
  for (let i = 0; i < k; i += 25) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(25, k - i) }, async () => {
        const r = await fetch(`${a.url}/api/sessions`, { method: 'POST', headers, body: '{}' });
        if (!r.ok) throw new Error(`POST /api/sessions: ${r.status} ${await r.text()}`);
        return ((await r.json()) as { session_id: string }).session_id;
      }),
    );
    ids.push(...batch);
  }
  return ids;
}

function connect(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = io(a.url, { auth: { token: a.token ?? 'x' }, transports: ['websocket'], reconnection: false });
    s.once('connect', () => resolve(s));
    s.once('connect_error', reject);
  });
}

async function subscribed(ids: string[]): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < ids.length; i += 50) {
    const batch = await Promise.all(
      ids.slice(i, i + 50).map(async (sid) => {
        const s = await connect();
        const r = await s.emitWithAck('session:subscribe', { session_id: sid });
        if (!r.ok) throw new Error(`session:subscribe: ${JSON.stringify(r)}`);
        return s;
      }),
    );
    out.push(...batch);
  }
  return out;
}

async function stream() {
  const ids = await sessionIds(a.k);
  const sockets = await subscribed(ids);
  const lat = new Float64Array(a.k * a.n);
  let got = 0;
  let events = 0;
  let maxPerEvent = 0;
  const problems: string[] = [];
  const ttfd: number[] = [];
  const sentAt: number[] = [];
  let lastEnd = 0;
  const ends = sockets.map(
    (s, idx) =>
      new Promise<void>((resolve) => {
        let seq = -1;
        let next = 0;
        let first = true;
        s.onAny((name: string, p: { seq: number; patch_type?: string; data?: { text_delta?: string } }) => {
          const at = clock();
          events++;
          if (seq >= 0 && p.seq !== seq + 1 && problems.length < 20) problems.push(`session ${idx}: ${name} seq ${p.seq} after ${seq}`);
          seq = p.seq;
          if (name === 'turn:patch' && p.patch_type === 'add_content') {
            if (first) {
              first = false;
              ttfd.push(at - sentAt[idx]);
            }
            const parts = p.data!.text_delta!.split(' ');
            let inEvent = 0;
            for (const part of parts) {
              if (!part) continue;
              const m = /^s(\d+)\.(\d+)@([\d.]+)$/.exec(part);
              if (!m || Number(m[1]) !== idx || Number(m[2]) !== next) {
                if (problems.length < 20) problems.push(`session ${idx}: unexpected delta ${part} (wanted #${next})`);
                continue;
              }
              next++;
              inEvent++;
              if (got < lat.length) lat[got++] = at - Number(m[3]);
            }
            maxPerEvent = Math.max(maxPerEvent, inEvent);
          }
          if (name === 'chat:end') {
            if (next !== a.n && problems.length < 20) problems.push(`session ${idx}: ${next}/${a.n} deltas at chat:end`);
            lastEnd = at;
            resolve();
          }
        });
      }),
  );
  // The orchestrator reads the server's CPU now: sessions and sockets are set up, the chats begin.
  console.log(JSON.stringify({ sending: true }));
  const t0 = clock();
  const acks = await Promise.all(
    sockets.map((s, i) => {
      sentAt[i] = clock();
      return s.emitWithAck('chat:send', { session_id: ids[i], message: `bench ${a.n} ${a.intervalMs} s${i}` });
    }),
  );
  const refused = acks.find((r) => !r.ok);
  if (refused) throw new Error(`chat:send refused: ${JSON.stringify(refused)}`);
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), a.timeoutMs ?? 120_000).unref());
  if ((await Promise.race([Promise.all(ends), timeout])) === 'timeout') problems.push('timed out before every chat:end');
  const seconds = ((lastEnd || clock()) - t0) / 1000;
  for (const s of sockets) s.disconnect();
  const l = lat.subarray(0, got);
  return {
    deltas: got,
    expected: a.k * a.n,
    seconds,
    deltasPerSec: got / seconds,
    events,
    maxDeltasPerEvent: maxPerEvent,
    p50: pct(l, 50),
    p99: pct(l, 99),
    ttfdP50: pct(ttfd, 50),
    ttfdP99: pct(ttfd, 99),
    problems,
  };
}

async function idle() {
  const ids = await sessionIds(a.k);
  // The orchestrator reads the server's memory now, before any socket connects.
  console.log(JSON.stringify({ created: true }));
  await new Promise((r) => setTimeout(r, 2000));
  const sockets = await subscribed(ids);
  console.log(JSON.stringify({ ready: true, sockets: sockets.length }));
  await new Promise((r) => process.once('SIGTERM', r));
  for (const s of sockets) s.disconnect();
}

if (a.mode === 'idle') await idle();
else console.log(JSON.stringify(await stream()));
process.exit(0);
