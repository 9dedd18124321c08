import { createHash } from 'node:crypto';
import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';
import type { ModelMessage } from './model.js';

/** o200k_base: the tokenizer of current OpenAI models, a fair estimate for other vendors' models. */
export const TOKENIZER_MODEL = 'o200k_base';

/**
 * Pieces longer than this many characters skip js-tiktoken's byte-pair merge. Its merge loop
 * rescans every pair after every merge (quadratic in the piece), and a pre-tokenizer piece is a
 * whole run of letters, punctuation, spaces or CJK characters: a 7 000-letter word held the event
 * loop for 6 s. Such pieces are merged here with a heap instead (O(n log n), same merge order,
 * so the count is exact); shorter pieces, i.e. all ordinary text, keep the library's path.
 */
export const LONG_PIECE_CHARS = 64;

// Built at import (during boot, before the service listens): parsing the rank table takes about a
// second, which a lazy first call made the first /history request stall every user for.
const enc = new Tiktoken(o200k);
const pieces = new RegExp(o200k.pat_str, 'gu');
const utf8 = new TextEncoder();

/** The library's own rank table ("b1,b2,..." → rank); js-tiktoken is pinned, so this shape is fixed. */
function ranks(): Map<string, number> {
  return (enc as unknown as { rankMap: Map<string, number> }).rankMap;
}

/** Exact count of a span; special-token text (`<|endoftext|>`) is counted as plain text, never thrown on. */
function encodeLength(text: string): number {
  return text ? enc.encode(text, [], []).length : 0;
}

/**
 * Min-heap of pairs packed as `rank * START_SPAN + start`: lowest rank first, leftmost on ties,
 * which is the library's merge order. Plain numbers keep it allocation-free.
 */
const START_SPAN = 2 ** 26; // pieces are at most a message long (well under 64 MiB)
class PairHeap {
  private a: number[] = [];
  get size() {
    return this.a.length;
  }
  push(v: number) {
    const a = this.a;
    let i = a.length;
    a.push(v);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p] <= v) break;
      a[i] = a[p];
      i = p;
    }
    a[i] = v;
  }
  pop(): number {
    const a = this.a;
    const top = a[0];
    const last = a.pop()!;
    const len = a.length;
    if (!len) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= len) break;
      const m = l + 1 < len && a[l + 1] < a[l] ? l + 1 : l;
      if (a[m] >= last) break;
      a[i] = a[m];
      i = m;
    }
    a[i] = last;
    return top;
  }
}

/**
 * Rank of the token made of two adjacent tokens (by their ranks), -1 when their bytes are no token.
 * Filled lazily: hostile runs repeat the same few pairs, so lookups become one numeric Map get
 * instead of building a "b1,b2,..." key. Bounded, cleared when full.
 */
const pairRanks = new Map<number, number>();
const PAIR_CACHE_MAX = 200_000;
const RANK_SPAN = 2 ** 18; // o200k ranks are < 200 019

/**
 * Number of tokens byte-pair encoding gives `bytes`. Parts are a linked list over byte offsets,
 * each holding its token's rank; heap entries whose pair changed since they were pushed are
 * skipped when popped (an equal [rank, start] entry is interchangeable with the live one).
 */
function bpeCount(bytes: Uint8Array): number {
  const table = ranks();
  const n = bytes.length;
  const next = new Int32Array(n + 1); // the part starting at i ends at next[i]
  const prev = new Int32Array(n + 1);
  const tok = new Int32Array(n + 1); // rank of the part starting at i
  const alive = new Uint8Array(n + 1).fill(1);
  for (let i = 0; i <= n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    tok[i] = i < n ? table.get(String(bytes[i])) ?? -1 : -1;
  }
  // Every byte is a token in o200k; anything else would need the library's slow path.
  if (tok.subarray(0, n).includes(-1)) return enc.encode(new TextDecoder().decode(bytes), [], []).length;
  const rankOf = (s: number): number => {
    const e = next[s];
    if (e >= n) return -1;
    const k = tok[s] * RANK_SPAN + tok[e];
    let r = pairRanks.get(k);
    if (r === undefined) {
      r = table.get(Array.prototype.join.call(bytes.subarray(s, next[e]), ',')) ?? -1;
      if (pairRanks.size >= PAIR_CACHE_MAX) pairRanks.clear();
      pairRanks.set(k, r);
    }
    return r;
  };
  const heap = new PairHeap();
  for (let i = 0; i + 1 < n; i++) {
    const r = rankOf(i);
    if (r >= 0) heap.push(r * START_SPAN + i);
  }
  let parts = n;
  while (heap.size) {
    const top = heap.pop();
    const r = Math.floor(top / START_SPAN), s = top - r * START_SPAN;
    if (!alive[s] || rankOf(s) !== r) continue; // stale entry
    const gone = next[s];
    alive[gone] = 0;
    next[s] = next[gone];
    prev[next[s]] = s;
    tok[s] = r;
    parts--;
    const after = rankOf(s);
    if (after >= 0) heap.push(after * START_SPAN + s);
    const p = prev[s];
    if (p >= 0) {
      const before = rankOf(p);
      if (before >= 0) heap.push(before * START_SPAN + p);
    }
  }
  return parts;
}

/**
 * Counts of long texts, by hash: `/history` recounts every turn on every call, and a megabyte
 * message costs about a second of CPU even on the linear path, so it is paid once, not per call.
 */
const MEMO_MIN_CHARS = 32 * 1024;
const MEMO_MAX = 256;
const memo = new Map<string, number>();

export function countTokens(text: string): number {
  if (!text) return 0;
  if (text.length < MEMO_MIN_CHARS) return count(text);
  const key = createHash('sha1').update(text).digest('base64');
  let n = memo.get(key);
  if (n === undefined) n = count(text);
  memo.delete(key); // re-insert: least recently used first in iteration order
  memo.set(key, n);
  if (memo.size > MEMO_MAX) memo.delete(memo.keys().next().value!);
  return n;
}

function count(text: string): number {
  let n = 0;
  let from = 0;
  // Spans between long pieces go through the library whole; only long pieces take the heap path.
  for (const m of text.matchAll(pieces)) {
    if (m[0].length <= LONG_PIECE_CHARS) continue;
    n += encodeLength(text.slice(from, m.index));
    // Heap entries pack the start offset below START_SPAN; a piece that long (never seen from a
    // client: messages are capped far below) is counted in parts, off by a token per part.
    for (let i = 0; i < m[0].length; i += START_SPAN / 4) {
      const bytes = utf8.encode(m[0].slice(i, i + START_SPAN / 4));
      n += ranks().has(bytes.join(',')) ? 1 : bpeCount(bytes);
    }
    from = m.index + m[0].length;
  }
  return n + encodeLength(text.slice(from));
}

/** Tokens of a model history: 3 of framing per message, its text (an image 85), its tool calls' JSON. */
export function messagesTokens(messages: ModelMessage[]): number {
  let n = 0;
  for (const m of messages) {
    n += 3;
    if (typeof m.content === 'string') n += countTokens(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) n += p.type === 'text' ? countTokens(p.text) : 85;
    if ('tool_calls' in m && m.tool_calls) n += countTokens(JSON.stringify(m.tool_calls));
  }
  return n;
}

