import t from 'tap';
import { chatFixture, echoTool, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { PROVIDER_SHAPES } from '../fixtures/provider-streams.js';
import type { HookEvents } from '../../src/core/engine/hooks.js';

// Issue 29 (a)-(d): every provider's stream shape becomes the same turn: both tool calls run with
// their own arguments, the text and thinking arrive, usage is the server's (or our estimate).

t.test('each provider stream shape: text, thinking, two tool calls, usage', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const calls: HookEvents['model.call'][] = [];
  app.service.hooks.on('model.call', (c) => void calls.push(c));
  let ends = 0;
  for (const shape of PROVIDER_SHAPES) {
    ran.length = 0;
    calls.length = 0;
    model.clear(); // a shape that failed leaves nothing for the next one
    model.script({ raw: shape.chunks('fake-model'), done: shape.done }, { text: ['done'] });
    const ack = await request(sock, 'chat:send', { session_id: sid, message: shape.name });
    t.equal(ack.ok, true, `${shape.name}: sent`);
    await untilEnd(seen, sid, 20_000, ++ends);
    t.match(seen.filter((e) => e.name === 'chat:end').at(-1)?.payload, { status: 'completed', finish_reason: 'stop' }, `${shape.name}: completed`);
    t.same(ran, ['a', 'b'], `${shape.name}: both calls ran with their own arguments`);
    const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
    const turn = msgs.filter((m: { role: string }) => m.role === 'assistant').at(-2);
    t.equal(turn.status, 'completed', `${shape.name}: turn completed`);
    t.equal(turn.blocks.filter((b: { type: string }) => b.type === 'text').map((b: { content: string }) => b.content).join(''), 'Hello', `${shape.name}: text`);
    if (shape.thinking) t.equal(turn.blocks.find((b: { type: string }) => b.type === 'thinking')?.content, shape.thinking, `${shape.name}: thinking once`);
    t.same(turn.tool_calls.map((c: { tool_name: string; arguments: string }) => [c.tool_name, JSON.parse(c.arguments).say]), [['Echo', 'a'], ['Echo', 'b']], `${shape.name}: two calls`);
    if (shape.usage === 'estimated') {
      t.ok(turn.usage.input_tokens > 0 && turn.usage.output_tokens > 0, `${shape.name}: estimated usage ${JSON.stringify(turn.usage)}`);
      t.equal(calls[0]?.estimated, true, `${shape.name}: model.call says estimated`);
    } else {
      t.same(turn.usage, shape.usage, `${shape.name}: usage`);
      t.equal(calls[0]?.estimated, false, `${shape.name}: reported, not estimated`);
    }
  }
  t.equal(model.requests.length, PROVIDER_SHAPES.length * 2, 'no request was retried');
});

t.test('cached prompt tokens reach model.call (OpenAI details, DeepSeek cache hits)', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  const calls: HookEvents['model.call'][] = [];
  app.service.hooks.on('model.call', (c) => void calls.push(c));
  const chunk = (extra: object) => ({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'fake-model', ...extra });
  model.script(
    { raw: [chunk({ choices: [{ index: 0, delta: { content: 'a' }, finish_reason: 'stop' }] }), chunk({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 24 } } })] },
    { raw: [chunk({ choices: [{ index: 0, delta: { content: 'b' }, finish_reason: 'stop' }], usage: { prompt_tokens: 30, completion_tokens: 1, prompt_cache_hit_tokens: 12 } })] },
  );
  for (const n of [1, 2]) {
    await request(sock, 'chat:send', { session_id: sid, message: `m${n}` });
    await untilEnd(seen, sid, 20_000, n);
  }
  t.same(calls.map((c) => c.cachedInputTokens), [24, 12]);
});
