import t from 'tap';
import { countTokens } from '../../src/chat/tokens.js';
import { build } from '../helpers/app.js';

/** POST /api/sessions/tokenize/{prompt,messages}: the /history tokenizer, template overhead, tools. */

t.test('tokenize a prompt and messages', async (t) => {
  const app = await build(t);
  const post = async (path: string, json: unknown) => {
    const r = await app.api(`/api/sessions/tokenize/${path}`, { method: 'POST', json });
    return { status: r.status, body: await r.json() };
  };
  const p = await post('prompt', { prompt: 'Hello, world! How are you today?' });
  t.equal(p.status, 200);
  t.same(p.body, { token_count: countTokens('Hello, world! How are you today?'), model: app.config.model.default, tokenizer: 'o200k_base' });
  t.ok(p.body.token_count >= 7 && p.body.token_count <= 10, `${p.body.token_count} tokens`);
  t.equal((await post('prompt', { prompt: '', model: 'm' })).body.token_count, 0);

  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Hello' },
  ];
  const m = await post('messages', { messages });
  t.equal(m.status, 200);
  t.equal(m.body.per_message.length, 2);
  t.equal(m.body.per_message[1], 3 + countTokens('user') + countTokens('Hello'), 'framing + role + content');
  t.equal(m.body.token_count, m.body.per_message[0] + m.body.per_message[1] + 3, 'plus the reply priming');
  const noGen = await post('messages', { messages, add_generation_prompt: false });
  t.equal(noGen.body.token_count, m.body.token_count - 3);
  const tools = [{ type: 'function', function: { name: 'Bash', description: 'run a command', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];
  const withTools = await post('messages', { messages, tools });
  t.equal(withTools.body.token_count, m.body.token_count + countTokens(JSON.stringify(tools)), 'tools counted');
  const parts = await post('messages', { messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] });
  t.equal(parts.body.per_message[0], 3 + countTokens('user') + countTokens('look') + 85);

  for (const [what, path, body] of [
    ['no prompt', 'prompt', {}],
    ['prompt not a string', 'prompt', { prompt: 5 }],
    ['unknown role', 'messages', { messages: [{ role: 'wizard', content: 'x' }] }],
    ['no messages', 'messages', {}],
    ['NUL', 'prompt', { prompt: 'a\u0000' }],
    ['unknown field', 'messages', { messages: [], colour: 1 }],
  ] as const) {
    const r = await post(path, body);
    t.equal(r.status, 422, what);
    t.equal(r.body.code, 'VALIDATION_ERROR', what);
  }
  t.equal((await app.api('/api/sessions/tokenize/prompt', { method: 'POST', json: { prompt: 'x' }, key: null })).status, 401, 'needs a key');
});
