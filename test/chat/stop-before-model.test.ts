import t from 'tap';
import { buildWithModel, createSession, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { deadline } from '../helpers/wait.js';

/**
 * A run aborted before its model call begins (shutdown right after chat:send) ends at once: the
 * abort listener of the model call is never fired for a signal aborted already, so the call must
 * look at the signal itself. Before that fix the shutdown waited for the model's timeout.
 */
t.test('a shutdown right after chat:send ends the run before its model call', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ hang: true });
  const sid = await createSession(app);
  const { sock } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'x' })).ok, true);
  sock.disconnect();
  const t0 = Date.now();
  // A deadline, not a bare timer: a timer left pending kept this file alive 10 s after its test.
  const done = await deadline(app.restart(), 10_000, 'the service to close and start again').then(
    () => true,
    () => false,
  );
  t.equal(done, true, `the service closed in ${Date.now() - t0} ms (under 10 s)`);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');
});
