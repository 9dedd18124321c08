import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import type { Reply } from '../fixtures/fake-model.js';

// A model that answers HTTP 200 with a stream holding no chunk at all is a failed model call, not
// an empty answer: system:error, chat:end failed, session failed, and the next chat completes.
const replies: [string, Reply][] = [
  ['no frame at all', { raw: [], done: false }],
  ['only [DONE]', { emptyStream: true }],
];
for (const [name, reply] of replies) {
  t.test(`a 200 stream with ${name}: the run fails and says why; the next chat completes`, async (t) => {
    const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_RETRIES: '0' });
    model.fallback = reply;
    const sid = await createSession(app);
    const sock = app.socket();
    if (!sock.connected) await next(sock, 'connect', 30_000);
    const seen = record(sock);
    await subscribe(sock, sid);
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'anything?' })).ok, true);
    await untilEnd(seen, sid, 15_000);
    const error = seen.find((e) => e.name === 'system:error')?.payload;
    t.match(error, { session_id: sid, code: 'MODEL_STREAM_BROKEN', message: /empty stream/ }, 'system:error names the empty stream');
    t.match(seen.at(-1), { name: 'chat:end', payload: { session_id: sid, status: 'failed', finish_reason: 'error' } });
    t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'failed');
    model.fallback = { text: ['fine'] };
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'again' })).ok, true);
    await untilEnd(seen, sid, 15_000, 2);
    t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } }, 'the next chat completes');
  });
}
