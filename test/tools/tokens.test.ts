import t from 'tap';
import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { countTokens, LONG_PIECE_CHARS } from '../../src/core/models/tokenizer.js';

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
