import t from 'tap';
import { toModelMessages } from '../../src/core/conversation/history.js';
import { TurnStore } from '../../src/core/conversation/turn-store.js';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/**
 * A run reads its model history from the newest compaction on (TurnStore.modelTurns), not the
 * whole session: the same messages as a read of every turn, from fewer rows, on every branch.
 */

function model(body: any) {
  if (String(body.messages[0].content).startsWith('You compact')) return { text: ['- Goal: talk.\n', '- Done: m0..m5.'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  return { text: Array.from({ length: 150 }, (_, i) => `answer-to-${user}-${i} `) };
}

t.test('after a compaction the bounded read gives the same history from fewer turns; a branch before it falls back', async (t) => {
  const { app, model: fake, sid, sock, seen } = await chatFixture(t);
  fake.fallback = model;
  let ends = 0;
  const chat = async (message: string) => {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true, `chat ${message}`);
    await untilEnd(seen, sid, 20_000, ++ends);
  };
  for (let i = 0; i < 6; i++) await chat(`m${i}`);
  const turns = new TurnStore(app.service.db);
  const same = async (what: string) => {
    const all = await turns.list(sid);
    const bounded = await turns.modelTurns(sid);
    t.same(toModelMessages(bounded), toModelMessages(all), `${what}: the same model history`);
    return { all: all.length, bounded: bounded.length };
  };
  t.same(await same('before any compaction'), { all: 12, bounded: 12 }, 'no compaction: every turn of the loop');

  t.same(await request(sock, 'chat:compact', { session_id: sid }), { ok: true });
  await untilEnd(seen, sid, 20_000, ++ends);
  await chat('m6');
  const after = await same('after a compaction and one more chat');
  t.equal(after.all, 15, '12 turns, the compaction entry, m6 and its answer');
  t.ok(after.bounded < after.all, `${after.bounded} of ${after.all} turns read`);
  const read = (await turns.modelTurns(sid)).map((s) => s.turn);
  t.equal(read[0].role, 'user', 'the first user message is read');
  t.ok(
    read.some((x) => x.kind === 'compaction'),
    'the compaction entry is read',
  );
  const next = fake.requests.length;
  await chat('m7');
  const sent = fake.requests[next].messages.map((m: any) => (typeof m.content === 'string' ? m.content.slice(0, 40) : m.role));
  t.match(sent[2], /^Summary of the earlier conversation/, 'the run got the summary after the first message');
  t.notOk(
    sent.some((c: string) => c === 'm0 ' || /^answer-to-m1-/.test(c)),
    'nothing the summary stands for',
  );

  // A rewind to before the compaction: the statement's cut belongs to the other branch, so the
  // whole loop is read, and the history is that branch's.
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  const rw = await app.api(`/api/sessions/${sid}/rewind`, { method: 'POST', json: { checkpoint_id: cps[3].checkpoint_id } });
  t.equal(rw.status, 200, 'rewound to m3');
  const rewound = await same('on a branch that forked before the compaction');
  t.same(rewound, { all: 6, bounded: 6 }, 'm0..m2 and their answers');
  const sw = await app.api(`/api/sessions/${sid}/switch-branch`, { method: 'POST', json: { checkpoint_id: cps.at(-1).checkpoint_id } });
  t.equal(sw.status, 200, 'back to the first branch');
  const back = await same('back on the compacted branch');
  t.ok(back.bounded < back.all, 'bounded again');
  sock.disconnect();
});
