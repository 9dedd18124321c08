import t from 'tap';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { pace } from '../helpers/wait.js';

t.test("a tool's progress notes reach subscribers as update_tool_call patches, throttled", async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  app.service.tools.register({
    name: 'Slow',
    description: 'slow',
    provider: 'builtin',
    parameters: { type: 'object' },
    execute: async (_a, ctx) => {
      ctx.progress('step 1');
      ctx.progress('step 2 (dropped: within 250 ms of the last note)');
      await pace(300, 'the tool works on past the 250 ms window of its last note');

      ctx.progress('step 3');
      return 'finished';
    },
  });
  model.script({ toolCalls: [{ name: 'Slow', args: {} }] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  const notes = seen.filter((e) => e.name === 'turn:patch' && e.payload.patch_type === 'update_tool_call').map((e) => e.payload.data);
  t.same(notes.map((d) => [d.status, d.progress]), [['pending', 'step 1'], ['pending', 'step 3']]);
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.match(msgs[1].tool_calls[0], { status: 'done', result: 'finished' }, 'progress leaves the projection as it was');
});
