import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ModelMessage } from './port.js';

/** o200k_base: the tokenizer of current OpenAI models, a fair estimate for other vendors' models. */
export const TOKENIZER_MODEL = 'o200k_base';

/**
 * Pieces longer than this many characters are merged with a heap (O(n log n), same merge order,
 * so the count is exact) rather than by rescanning every pair after every merge, which is
 * quadratic in the piece: a pre-tokenizer piece is a whole run of letters, punctuation, spaces or
 * CJK characters, and a 7 000-letter word held the event loop for 6 s that way.
 */
export const LONG_PIECE_CHARS = 64;

/**
 * The o200k rank table: every token's bytes in one buffer and an open-addressing hash over byte
 * spans in typed arrays, so a span of a piece (its UTF-8 bytes as a one-byte string, byte i = char
 * code i) is looked up without building a substring. js-tiktoken's own tables ("b1,b2,..." keys
 * plus a reverse map of byte arrays) held about 140 MB of the service's memory for counting alone;
 * a Map of byte strings about 20 MB; this about 7 MB. The ranks file is read as text and dropped
 * once built (imported, its 2.3 MB of source and ranks would stay for the life of the process).
 * Built at import (during boot, before the service listens): a lazy first call made the first
 * /history request stall every user.
 */
class RankTable {
  private readonly slots: number;
  private readonly rank: Int32Array;
  private readonly at: Uint32Array;
  private readonly len: Uint16Array;

  constructor(
    private readonly bytes: Buffer,
    tokens: { at: number; len: number; rank: number }[],
  ) {
    this.slots = 2 ** Math.ceil(Math.log2(tokens.length * 2.5));
    this.rank = new Int32Array(this.slots).fill(-1);
    this.at = new Uint32Array(this.slots);
    this.len = new Uint16Array(this.slots);
    for (const t of tokens) {
      let h = this.hashBytes(t.at, t.len);
      while (this.rank[h] >= 0) h = (h + 1) & (this.slots - 1);
      this.rank[h] = t.rank;
      this.at[h] = t.at;
      this.len[h] = t.len;
    }
  }

  private hashBytes(at: number, len: number): number {
    let h = 0x811c9dc5;
    for (let i = 0; i < len; i++) h = Math.imul(h ^ this.bytes[at + i], 0x01000193);
    return (h >>> 0) & (this.slots - 1);
  }

  /** Rank of the token whose bytes are bin[start..end), or -1. */
  get(bin: string, start = 0, end = bin.length): number {
    const n = end - start;
    let h = 0x811c9dc5;
    for (let i = start; i < end; i++) h = Math.imul(h ^ bin.charCodeAt(i), 0x01000193);
    h = (h >>> 0) & (this.slots - 1);
    for (;;) {
      const r = this.rank[h];
      if (r < 0) return -1;
      if (this.len[h] === n) {
        const at = this.at[h];
        let i = 0;
        while (i < n && this.bytes[at + i] === bin.charCodeAt(start + i)) i++;
        if (i === n) return r;
      }
      h = (h + 1) & (this.slots - 1);
    }
  }
}

function loadO200k(): { table: RankTable; pattern: string } {
  const file = createRequire(import.meta.url).resolve('js-tiktoken/ranks/o200k_base').replace(/\.cjs$/, '.js');
  const text = readFileSync(file, 'utf8');
  const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  const o200k = JSON.parse(json) as { pat_str: string; bpe_ranks: string };
  if (typeof o200k.pat_str !== 'string' || typeof o200k.bpe_ranks !== 'string') throw new Error(`unexpected tokenizer ranks file ${file}`);
  const bytes = Buffer.alloc(o200k.bpe_ranks.length);
  const tokens: { at: number; len: number; rank: number }[] = [];
  let used = 0;
  for (const line of o200k.bpe_ranks.split('\n')) {
    if (!line) continue;
    const [, offset, ...b64] = line.split(' ');
    const base = Number.parseInt(offset, 10);
    b64.forEach((t, i) => {
      const len = bytes.write(t, used, 'base64');
      tokens.push({ at: used, len, rank: base + i });
      used += len;
    });
  }
  return { table: new RankTable(Buffer.from(bytes.subarray(0, used)), tokens), pattern: o200k.pat_str };
}
const o200k = loadO200k();
const table = o200k.table;
const pieces = new RegExp(o200k.pattern, 'gu');

/** A piece's UTF-8 bytes as a one-byte string (the table's key form). */
function bytesOf(piece: string): string {
  // ASCII: its bytes are its characters.
  return Buffer.byteLength(piece, 'utf8') === piece.length ? piece : Buffer.from(piece, 'utf8').toString('latin1');
}

/**
 * Tokens of one short piece: js-tiktoken's byte-pair merge (merge the adjacent pair of lowest rank,
 * leftmost on ties, until no pair is a token), counting the parts left.
 */
function mergeCount(bin: string): number {
  const bounds = Array.from({ length: bin.length + 1 }, (_, i) => i);
  while (bounds.length > 2) {
    let min = Number.POSITIVE_INFINITY;
    let at = -1;
    for (let i = 0; i + 2 < bounds.length; i++) {
      const r = table.get(bin, bounds[i], bounds[i + 2]);
      if (r >= 0 && r < min) {
        min = r;
        at = i;
      }
    }
    if (at < 0) break;
    bounds.splice(at + 1, 1);
  }
  return bounds.length - 1;
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
function bpeCount(bin: string): number {
  const n = bin.length;
  const next = new Int32Array(n + 1); // the part starting at i ends at next[i]
  const prev = new Int32Array(n + 1);
  const tok = new Int32Array(n + 1); // rank of the part starting at i
  const alive = new Uint8Array(n + 1).fill(1);
  for (let i = 0; i <= n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    tok[i] = i < n ? table.get(bin, i, i + 1) : -1;
  }
  // Every byte is a token in o200k; anything else would need the quadratic path.
  if (tok.subarray(0, n).includes(-1)) return mergeCount(bin);
  const rankOf = (s: number): number => {
    const e = next[s];
    if (e >= n) return -1;
    const k = tok[s] * RANK_SPAN + tok[e];
    let r = pairRanks.get(k);
    if (r === undefined) {
      r = table.get(bin, s, next[e]);
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
 * Counts by text, remembered under the text's SHA-1: the compaction check counts a run's history
 * between its model calls and `/history` recounts every turn, and each run loads its history
 * afresh from the database, so the same texts come back as new strings every time. Hashing a text
 * costs a small share of counting it; without this, a 200-session soak spent 31% of the main
 * thread in `count` by its 18th minute, growing with every session's history (bench/soak.ts).
 * Short texts are counted directly (their hash costs about what their count does).
 */
const MEMO_MIN_CHARS = 128;
const MEMO_MAX = 100_000;
const memo = new Map<string, number>();

export function countTokens(text: string): number {
  if (!text) return 0;
  if (text.length < MEMO_MIN_CHARS) return count(text);
  const key = createHash('sha1').update(text).digest('base64');
  let n = memo.get(key);
  if (n === undefined) n = count(text);
  else memo.delete(key); // re-inserted below: least recently used first in iteration order
  memo.set(key, n);
  if (memo.size > MEMO_MAX) memo.delete(memo.keys().next().value!);
  return n;
}

function count(text: string): number {
  let n = 0;
  // Special-token text (`<|endoftext|>`) is counted as plain text, as js-tiktoken does with no special tokens allowed.
  for (const m of text.matchAll(pieces)) {
    const piece = m[0];
    if (piece.length <= LONG_PIECE_CHARS) {
      const bin = bytesOf(piece);
      n += table.get(bin) >= 0 ? 1 : mergeCount(bin);
      continue;
    }
    // Heap entries pack the start offset below START_SPAN; a piece that long (never seen from a
    // client: messages are capped far below) is counted in parts, off by a token per part.
    for (let i = 0; i < piece.length; i += START_SPAN / 4) {
      const bin = bytesOf(piece.slice(i, i + START_SPAN / 4));
      n += table.get(bin) >= 0 ? 1 : bpeCount(bin);
    }
  }
  return n;
}

/** Tokens of a model history: 3 of framing per message, its text (an image 85), its tool calls' JSON. */
export function messagesTokens(messages: ModelMessage[]): number {
  return historyTokens(messages, countTokens);
}

/**
 * At least messagesTokens(messages), without the tokenizer: a token stands for one byte of UTF-8
 * or more, so a text's UTF-8 length bounds its count (Buffer.byteLength: native, no copy). A run
 * start asks whether its history is past the compaction threshold; a first message is far below
 * it, and counting its system prompt (1.5 KB, the same for every run) cost a tenth of a
 * millisecond each time. Until a history's bytes reach the threshold, it is not counted at all.
 */
export function messagesTokensAtMost(messages: ModelMessage[]): number {
  return historyTokens(messages, (text) => Buffer.byteLength(text, 'utf8'));
}

function historyTokens(messages: ModelMessage[], count: (text: string) => number): number {
  let n = 0;
  for (const m of messages) {
    n += 3;
    if (typeof m.content === 'string') n += count(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) n += p.type === 'text' ? count(p.text) : 85;
    if ('tool_calls' in m && m.tool_calls) n += count(JSON.stringify(m.tool_calls));
  }
  return n;
}

