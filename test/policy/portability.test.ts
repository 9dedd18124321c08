import t from 'tap';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

// An exported session whose call waits for an approval imports with that approval intact: the
// ref stays an object naming the call by its new id (it was remapped as a bare id before).
t.test('an approval ref survives export and import', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t, { AGENTSVC_POLICY: JSON.stringify({ rules: [{ tool: 'Write', action: 'ask' }] }) });
  model.script({ toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'x' } }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'write' });
  await untilEnd(seen, sid);
  const zip = await (await app.api(`/api/sessions/${sid}/export`)).arrayBuffer();
  const form = new FormData();
  form.set('file', new Blob([new Uint8Array(zip)]), 'session.zip');
  const made = await (await app.api('/api/sessions/import', { method: 'POST', body: form })).json();
  const call = (await (await app.api(`/api/sessions/${made.session_id}/messages`)).json())[1].tool_calls[0];
  t.match(call, { status: 'awaiting_answer', pending_question_ref: { type: 'approval', tool_name: 'Write', rule: { tool: 'Write', action: 'ask' } } });
  t.equal(call.pending_question_ref.tool_call_id, call.id, 'the ref names the imported call');
});
