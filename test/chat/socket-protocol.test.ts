import t from 'tap';
import { chatFixture, subscribe, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/** docs/socket-protocol.md: every client event with an ack gets one; a resubscribe on the same socket repeats nothing. */

t.test('unknown events and over-deep payloads get an error ack; the socket stays usable', async (t) => {
  const { sock, sid } = await chatFixture(t);
  t.same(await request(sock, 'chat:sned', { session_id: sid }), { ok: false, error: { code: 'UNKNOWN_EVENT', message: 'unknown event "chat:sned"' } });
  t.match(await request(sock, 'nothing', undefined), { ok: false, error: { code: 'UNKNOWN_EVENT' } });
  const deep = JSON.parse('['.repeat(1000) + ']'.repeat(1000));
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'x', extra: deep }), { ok: false, error: { code: 'VALIDATION_ERROR', message: /deeper than 64/ } });
  t.match(await request(sock, 'session:subscribe', deep), { ok: false, error: { code: 'VALIDATION_ERROR' } });
  t.same(await request(sock, 'session:subscribe', { session_id: sid }), { ok: true, session_id: sid }, 'still usable');
});

t.test('a resubscribe on the same socket mid-run continues from its position: nothing repeated or lost', async (t) => {
  const { model, sid, sock, seen } = await chatFixture(t);
  model.script({ text: Array.from({ length: 120 }, (_, i) => `w${i} `), delayMs: 10 });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'stream' })).ok, true);
  for (let i = 0; i < 5; i++) {
    await waitFor(() => seen.filter((e) => e.payload.patch_type === 'add_content').length >= 10 * (i + 1), { what: `${10 * (i + 1)} deltas` });

    // An older position (from 0) and the live-only form: both go on from where this socket is.
    await subscribe(sock, sid, i % 2 ? undefined : 0);
  }
  await untilEnd(seen, sid);
  const seqs = seen.filter((e) => e.payload.session_id === sid).map((e) => e.payload.seq);
  t.same(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i), 'every seq once, in order');
  t.equal(seen.filter((e) => e.name === 'chat:end').length, 1);
});
