import t from 'tap';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

t.test('the system prompt is assembled from contributors; a failing one is left out', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const remove = app.service.prompt.add({ name: 'test-memories', contribute: (ctx) => `Known facts for ${ctx.sessionId}: the user likes tea.` });
  app.service.prompt.add({
    name: 'broken',
    contribute: () => {
      throw new Error('plugin bug');
    },
  });
  app.service.prompt.add({ name: 'silent', contribute: async () => null });
  model.script({ text: ['ok'] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'hi' });
  await untilEnd(seen, sid);
  const system = model.requests[0].messages[0];
  t.equal(system.role, 'system');
  t.match(system.content, /You are/, 'the base prompt comes first');
  t.ok(system.content.endsWith(`Known facts for ${sid}: the user likes tea.`), 'a contributor adds its section');
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } }, 'a broken contributor does not fail the run');

  remove();
  await request(sock, 'chat:send', { session_id: sid, message: 'again', mode: 'planning' });
  await untilEnd(seen, sid, 20_000, 2);
  const second = model.requests[1].messages[0].content;
  t.notMatch(second, /likes tea/, 'a removed contributor is gone');
  t.match(second, /plan/i, 'planning mode adds its section');
  const h = await (await app.api(`/api/sessions/${sid}/history`)).json();
  t.ok(h.system_prompt_tokens > 20, '/history counts the assembled prompt');
});
