import t from 'tap';
import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';
import type { ModelMessage } from '../../src/core/models/port.js';
import { countTokens, LONG_PIECE_CHARS, messagesTokens, messagesTokensAtMost } from '../../src/core/models/tokenizer.js';

const lib = new Tiktoken(o200k);
const random = (alphabet: string, n: number) => Array.from({ length: n }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');

t.test('a long run of one letter class is counted in linear time (was quadratic: 6 s for 7 000 letters)', async (t) => {
  countTokens('warm up the rank table');
  for (const run of ['a'.repeat(20_000), 'Q'.repeat(20_000), '!'.repeat(20_000), '漢'.repeat(20_000), ' '.repeat(20_000) + 'x']) {
    const start = performance.now();
    const n = countTokens(run);
    const ms = performance.now() - start;
    t.ok(n > 0 && n <= run.length, `${JSON.stringify(run.slice(0, 3))}… counted (${n} tokens)`);
    // The quadratic merge needed ~50 s here; the heap merge needs ~10 ms. 1.5 s leaves room for a busy CI box.
    t.ok(ms < 1500, `counted in ${ms.toFixed(0)} ms`);
  }
});

t.test('counts stay exact: long pieces merge in the library order', async (t) => {
  const alphabets = ['abcdefghijklmnopqrstuvwxyz', 'ab', 'eeeeeeet', 'ABCDEFabc', '!?.,;:-=', '漢字かなカナ', 'äöüßéèñ', ' \t', 'abc😀ü'];
  for (const a of alphabets) {
    for (const n of [LONG_PIECE_CHARS + 1, 300, 600]) {
      const text = random(a, n);
      t.equal(countTokens(text), lib.encode(text, [], []).length, `${JSON.stringify(a)} × ${n}`);
    }
  }
  const mixed = 'Hello world, '.repeat(50) + 'x'.repeat(3000) + ' and more text\n\n   ' + '='.repeat(500) + ' end ' + 'Zz'.repeat(40);
  t.equal(countTokens(mixed), lib.encode(mixed, [], []).length, 'prose around long pieces');
  const big = 'The quick brown fox. '.repeat(3000);
  t.equal(countTokens(big), lib.encode(big, [], []).length, 'a long text (memoised path)');
  t.equal(countTokens(big), lib.encode(big, [], []).length, 'the same text again, from the memo');
  t.equal(countTokens(''), 0);
});

t.test('special-token text in a message is counted as text instead of throwing', async (t) => {
  const text = 'a message quoting <|endoftext|> and <|endofprompt|>';
  t.equal(countTokens(text), lib.encode(text, [], []).length);
});

t.test('messagesTokensAtMost is never below the exact count (it lets compaction skip counting)', async (t) => {
  const alphabets = ['abcdefghijklmnopqrstuvwxyz ', '漢字かなカナ', '😀🎉', ' \t\n', '{}":,[]', 'a'];
  for (const a of alphabets) {
    for (const n of [0, 1, 7, 300]) {
      const text = random(a, n);
      const history: ModelMessage[] = [
        { role: 'system', content: text },
        { role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }] },
        { role: 'assistant', content: text, tool_calls: [{ id: 'c1', name: 'Bash', arguments: JSON.stringify({ command: text }) }] },
        { role: 'tool', tool_call_id: 'c1', content: text },
      ];
      const exact = messagesTokens(history);
      const bound = messagesTokensAtMost(history);
      t.ok(bound >= exact, `${JSON.stringify(a)} x ${n}: bound ${bound} >= exact ${exact}`);
    }
  }
  t.equal(messagesTokensAtMost([{ role: 'user', content: 'abc' }]), 3 + 3, '3 of framing and one per UTF-8 byte');
  t.equal(messagesTokensAtMost([{ role: 'user', content: '漢字' }]), 3 + 6, 'a CJK character is 3 bytes');
});
