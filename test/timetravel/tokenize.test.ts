import t from 'tap';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { countTokens } from '../../src/core/models/tokenizer.js';
import { build } from '../helpers/app.js';
import { pace } from '../helpers/wait.js';

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

t.test('a large tokenize request does not hold the event loop: /api/health answers meanwhile', async (t) => {
  const app = await build(t);
  // Four prompts of 1000 words of 999 random letters (each under the 1 MiB body limit) sent at
  // once, and 500 such messages: every word is a single pre-tokenizer piece, the slow path of
  // byte-pair merging (about 230 ms a prompt in the request's thread).
  let seed = 7;
  const letter = () => String.fromCharCode(97 + ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % 26));
  const prompts = Array.from({ length: 4 }, () => Array.from({ length: 1000 }, () => Array.from({ length: 999 }, letter).join('')).join(' '));
  const words = prompts[0].split(' ').slice(0, 500);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  const health: number[] = [];
  delay.enable();
  const post = (path: string, json: unknown) => app.api(`/api/sessions/tokenize/${path}`, { method: 'POST', json }).then(async (r) => ({ status: r.status, ...(await r.json()) }));
  const big = Promise.all(prompts.map((prompt) => post('prompt', { prompt })));
  const msgs = post('messages', { messages: words.map((w) => ({ role: 'user', content: w })) });
  let done = false;
  void Promise.all([big, msgs]).finally(() => (done = true));
  while (!done) {
    const t0 = performance.now();
    const status = (await app.api('/api/health')).status;
    health.push(status === 200 ? performance.now() - t0 : Number.POSITIVE_INFINITY);
    await pace(10, "the health sampler's period");

  }
  delay.disable();
  const maxDelay = delay.max / 1e6;
  const maxHealth = Math.max(...health);
  t.comment(`4 x ${prompts[0].length} characters and ${words.length} messages: ${health.length} /api/health calls meanwhile, slowest ${maxHealth.toFixed(1)} ms; event loop delay max ${maxDelay.toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`);
  t.ok(health.length >= 3, 'health was asked while the count ran');
  t.ok(maxHealth < 300, `every /api/health answered within 300 ms (${maxHealth.toFixed(1)} ms)`);
  t.ok(maxDelay < 250, `the event loop was never held 250 ms (${maxDelay.toFixed(1)} ms)`);
  const [ps, m] = await Promise.all([big, msgs]);
  t.same(
    ps.map((p) => [p.status, p.token_count]),
    prompts.map((p) => [200, countTokens(p)]),
    'the counts are exact',
  );
  t.equal(m.status, 200, JSON.stringify(m).slice(0, 200));
  t.same(
    m.per_message,
    words.map((w) => 3 + countTokens('user') + countTokens(w)),
    'per message too',
  );
});
