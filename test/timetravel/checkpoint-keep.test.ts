import t from 'tap';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

// AGENTSVC_CHECKPOINT_KEEP=N keeps the newest N checkpoints of each branch as chats come, not only
// at the daily retention sweep.
t.test('AGENTSVC_CHECKPOINT_KEEP=2: after 4 chats the branch lists its 2 newest checkpoints', async (t) => {
  const { app, sid, sock, seen } = await chatFixture(t, { AGENTSVC_CHECKPOINT_KEEP: '2' });
  for (let i = 1; i <= 4; i++) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: `step ${i}` })).ok, true);
    await untilEnd(seen, sid, 15_000, i);
  }
  const cps = (await (await app.api(`/api/sessions/${sid}/checkpoints`)).json()) as { label: string }[];
  t.same(
    cps.map((c) => c.label),
    ['step 3', 'step 4'],
  );
});
