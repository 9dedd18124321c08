import t from 'tap';
import type { Socket } from 'socket.io-client';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { catchCrashes, chaosSeed, connectedSocket, deadline, prng, seqProblems } from '../helpers/chaos.js';
import { pace } from '../helpers/wait.js';

/**
 * Reconnect storm: subscribers of running sessions drop (a dead socket, or session:unsubscribe on a
 * live one) at random moments and come back with since_seq = the last seq they saw. Each must end
 * with every seq of its session exactly once and the text GET .../messages stores.
 */

const SESSIONS = 20;
const SUBSCRIBERS = 100;
const DELTAS = 120;
const DELTA_MS = 20;

t.test(`${SUBSCRIBERS} subscribers of ${SESSIONS} streaming sessions drop and resubscribe with since_seq`, async (t) => {
  const seed = chaosSeed();
  t.comment(`seed ${seed} (replay with CHAOS_SEED=${seed})`);
  const rnd = prng(seed);
  const crashes = catchCrashes(t);
  const { app, model } = await buildWithModel(t);
  // Many small deltas with pacing: each run streams for ~DELTAS * DELTA_MS ms.
  model.fallback = (body: any) => {
    const tag = (body.messages.at(-1).content as string).replace(/\W/g, '');
    return { text: Array.from({ length: DELTAS }, (_, i) => `${tag}:${i} `), delayMs: DELTA_MS };
  };
  const runMs = DELTAS * DELTA_MS;
  const sids: string[] = [];
  for (let i = 0; i < SESSIONS; i++) sids.push(await createSession(app));
  const driver = await connectedSocket(app);
  const acks = await Promise.all(sids.map((sid, i) => request(driver, 'chat:send', { session_id: sid, message: `s${i}` })));
  t.same(acks.filter((a) => !a.ok), [], 'every chat:send acked ok');

  let reconnects = 0;
  let events = 0;
  const problems: string[] = [];

  const subscriber = async (c: number) => {
    const sid = sids[c % SESSIONS];
    const got: { name: string; payload: any }[] = [];
    let sock: Socket | null = null;
    let ended: (() => void) | null = null;
    const done = new Promise<void>((r) => (ended = r));
    const attach = async (fresh: boolean) => {
      if (fresh) {
        sock = await connectedSocket(app);
        const mine = sock;
        mine.onAny((name, payload) => {
          if (sock !== mine || payload?.session_id !== sid) return;
          got.push({ name, payload });
          if (name === 'chat:end') ended?.();
        });
      }
      const since = got.at(-1)?.payload.seq ?? 0;
      const ack = await request(sock!, 'session:subscribe', { session_id: sid, since_seq: since });
      if (!ack.ok) problems.push(`subscriber ${c}: subscribe ack ${JSON.stringify(ack)}`);
    };
    await pace(rnd.int(0, runMs / 4), 'the subscriber joins at a random moment');
    await attach(true);
    const drops = rnd.int(3, 6);
    for (let d = 0; d < drops; d++) {
      await pace(rnd.int(0, runMs / drops), 'the next drop comes at a random moment');

      reconnects++;
      if (rnd.next() < 0.5) {
        // The connection dies: whatever was in flight on it is lost.
        const old = sock!;
        sock = null;
        old.disconnect();
        await pace(rnd.int(0, 150), 'a random gap before coming back');
        await attach(true);
      } else {
        const ack = await request(sock!, 'session:unsubscribe', { session_id: sid });
        if (!ack.ok) problems.push(`subscriber ${c}: unsubscribe ack ${JSON.stringify(ack)}`);
        await pace(rnd.int(0, 150), 'a random gap before coming back');
        await attach(false);
      }
    }
    try {
      await deadline(done, runMs + 20_000, `subscriber ${c} chat:end`);
    } catch (e) {
      problems.push((e as Error).message);
    }
    sock!.disconnect();
    events += got.length;
    return { c, sid, got };
  };

  const results = await deadline(Promise.all(Array.from({ length: SUBSCRIBERS }, (_, c) => subscriber(c))), 90_000, 'all subscribers');
  const stored = new Map<string, string>();
  for (const sid of sids) {
    const turns: any[] = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    stored.set(sid, turns.filter((m) => m.role === 'assistant').flatMap((m) => m.blocks.filter((b: any) => b.type === 'text').map((b: any) => b.content)).join(''));
  }
  const mismatches: string[] = [];
  for (const { c, sid, got } of results) {
    problems.push(...seqProblems(got.map((e) => e.payload.seq), `subscriber ${c}`));
    if (got.at(-1)?.name !== 'chat:end') problems.push(`subscriber ${c}: last event ${got.at(-1)?.name}`);
    const text = got.filter((e) => e.name === 'turn:patch' && e.payload.patch_type === 'add_content').map((e) => e.payload.data.text_delta).join('');
    if (text !== stored.get(sid)) mismatches.push(`subscriber ${c}: text of ${text.length} chars differs from the stored ${stored.get(sid)?.length}`);
  }
  t.comment(`subscribers: ${SUBSCRIBERS}; reconnects: ${reconnects}; events checked: ${events}`);
  t.same(crashes.slice(0, 3), [], 'no uncaught exception in the service');
  t.same(problems.slice(0, 10), [], `every subscriber saw every seq exactly once, in order (${problems.length} problems)`);
  t.same(mismatches.slice(0, 10), [], 'every subscriber built the stored text');
  t.ok([...stored.values()].every((s) => s.split(' ').length > DELTAS), 'the stored answers are complete');
});
