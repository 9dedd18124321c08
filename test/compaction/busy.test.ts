import t from 'tap';
import { buildWithModel, createSession, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

// docs/time-travel.md: compacting a session that is running answers 409 SESSION_BUSY, whatever its history
// (it used to answer 200 "too little to compact" for a short one).
t.test('POST compact on a running session answers 409 SESSION_BUSY and changes nothing', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ hang: true });
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'a short history' })).ok, true);
  await waitFor(() => seen.some((e) => e.name === 'turn:start' && e.payload.role === 'assistant'), { what: "the assistant's turn:start" });
  const res = await app.api(`/api/sessions/${sid}/compact`, { method: 'POST' });
  t.equal(res.status, 409);
  t.match(await res.json(), { code: 'SESSION_BUSY' });
  t.equal(seen.filter((e) => e.name === 'chat:start').length, 1, 'no compaction run started');
  await request(sock, 'chat:stop', { session_id: sid });
});
