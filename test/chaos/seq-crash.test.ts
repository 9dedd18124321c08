import t from 'tap';
import pg from 'pg';
import { freshDatabaseUrl } from '../helpers/db.js';
import { kill } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { boot, withModel } from '../helpers/nodes.js';

/**
 * docs/socket-protocol.md (durability of the stream) and docs/sessions-and-runs.md (orphans closed before listening), with a real
 * SIGKILL of `agentsvc up` while 8 chats stream fast (text deltas are sent before they are
 * written): after the restart no seq a client saw is given to another event, a client resuming
 * from its last seq learns how each run ended with seqs above everything it saw, and the next
 * chat:send right after the restart is accepted.
 */

type Ev = { name: string; payload: any };

const SESSIONS = 8;

/** JSON with sorted keys (jsonb does not keep the order a payload was sent in). */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));

t.test('SIGKILL mid-stream, restart: no seq reused, the end arrives above what was seen, the session takes the next chat', async (t) => {
  const { home, env: base } = await withModel(t, (body: any) => {
    // The newest user message decides (the history of a chat after the crash starts with the stream's).
    const last = body.messages.filter((m: any) => m.role === 'user').at(-1).content as string;
    if (last.startsWith('after')) return { text: ['fresh ', 'answer'] };
    return { text: Array.from({ length: 2000 }, (_, i) => `w${i} `), delayMs: 5 };
  });
  const dbUrl = await freshDatabaseUrl(t);
  const env = { ...base, AGENTSVC_HOME: home, DATABASE_URL: dbUrl };
  const first = await boot(t, env);
  const sock = await first.socket();
  const seen = new Map<string, Ev[]>();
  sock.onAny((name, payload) => seen.get(payload?.session_id)?.push({ name, payload }));
  const sids: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const sid = (await (await first.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
    seen.set(sid, []);
    sids.push(sid);
    await sock.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
    t.equal((await sock.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: `stream ${i}` })).ok, true);
  }
  const deltas = (sid: string) => seen.get(sid)!.filter((e) => e.payload.patch_type === 'add_content').length;
  await waitFor(() => sids.every((sid) => deltas(sid) >= 20), { timeoutMs: 30_000, everyMs: 20, what: 'every chat streaming' });
  // Writes of events stall (a slow disk, a lock), sends do not: what clients see now is not stored
  // when the process dies.
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  t.teardown(() => db.end());
  await db.query('begin');
  await db.query('lock table session_events in share mode');
  const atLock = new Map(sids.map((sid) => [sid, deltas(sid)]));
  await waitFor(() => sids.every((sid) => deltas(sid) >= atLock.get(sid)! + 20), { timeoutMs: 30_000, everyMs: 20, what: 'every chat streaming past the stall' });
  await kill(first.up.child, 'SIGKILL');
  sock.disconnect();
  // The dead process's blocked inserts go with it, as a crash takes what was not yet written.
  await db.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
  await db.query('rollback');
  const before = new Map(sids.map((sid) => [sid, [...seen.get(sid)!]]));
  const lastSeen = new Map(sids.map((sid) => [sid, Math.max(...before.get(sid)!.map((e) => e.payload.seq))]));

  const second = await boot(t, env);
  // docs/sessions-and-runs.md: one node closes every run it finds running before it prints its listening line.
  const statuses = await Promise.all(sids.map(async (sid) => (await (await second.api(`/api/sessions/${sid}`)).json()).status));
  t.same(statuses.filter((s) => s === 'running'), [], 'no session is running once the restarted service listens');

  // A client resuming from its last seq: the run's end (chat:end, or a resync whose turns are all
  // ended), every seq above what it saw.
  const s2 = await second.socket();
  const after = new Map<string, Ev[]>(sids.map((sid) => [sid, []]));
  s2.onAny((name, payload) => after.get(payload?.session_id)?.push({ name, payload }));
  for (const sid of sids) {
    const ack = await s2.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid, since_seq: lastSeen.get(sid) });
    t.equal(ack.ok, true);
  }
  const ended = (sid: string) => after.get(sid)!.some((e) => e.name === 'chat:end' || e.name === 'session:resync');
  await waitFor(() => sids.every(ended), { timeoutMs: 15_000, everyMs: 20, what: 'every resumed client learns how its run ended' }).catch((e) => t.fail(e.message));
  for (const sid of sids) {
    const evs = after.get(sid)!;
    t.same(evs.filter((e) => e.payload.seq <= lastSeen.get(sid)!).map((e) => `${e.name}@${e.payload.seq}`), [], 'nothing at or below the last seq seen');
    const resync = evs.find((e) => e.name === 'session:resync');
    if (resync) t.same(resync.payload.turns.filter((x: any) => x.status === 'streaming'), [], 'the resync holds the run ended');
  }

  // docs/sessions-and-runs.md: the next chat:send right after the restart is accepted, its events continue above.
  for (const sid of sids) {
    const ack = await s2.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'after the crash' });
    t.equal(ack.ok, true, `chat:send after the restart: ${JSON.stringify(ack)}`);
  }
  const done = (sid: string) => after.get(sid)!.filter((e) => e.name === 'chat:end').length >= (after.get(sid)!.some((e) => e.name === 'session:resync') ? 1 : 2);
  await waitFor(() => sids.every(done), { timeoutMs: 20_000, everyMs: 20, what: 'the chats after the restart' }).catch((e) => t.fail(e.message));
  for (const sid of sids) {
    const seqs = after.get(sid)!.map((e) => e.payload.seq);
    t.ok(seqs.every((s, i) => i === 0 || s > seqs[i - 1]), 'seqs rise');
    t.match(after.get(sid)!.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
  }
  // At the end (the closing of the crashed runs done, new runs stored): what is stored at a seq a
  // client saw is that very event, or nothing (it was lost in the crash).
  const reused: string[] = [];
  let unstored = 0;
  for (const sid of sids) {
    const { rows } = await db.query('select seq, name, payload from session_events where session_id = $1 and seq <= $2', [sid, lastSeen.get(sid)]);
    const stored = new Map(rows.map((r) => [r.seq as number, r as { name: string; payload: unknown }]));
    for (const e of before.get(sid)!) {
      const s = stored.get(e.payload.seq);
      if (!s) unstored++;
      else if (s.name !== e.name || canonical(s.payload) !== canonical(e.payload)) reused.push(`${sid} seq ${e.payload.seq}: saw ${e.name}, stored ${s.name}`);
    }
  }
  t.comment(`events seen before the kill but never stored: ${unstored}`);
  t.ok(unstored >= SESSIONS * 20, 'the crash lost events clients had seen');
  t.same(reused, [], 'no seq a client saw was given to another event');

  await kill(second.up.child, 'SIGTERM');
});
