import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Uniform random base62 string (rejection sampling: no modulo bias). */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export type IdPrefix = 'user' | 'sess' | 'turn' | 'entry' | 'tc' | 'cp' | 'cmp' | 'br' | 'key' | 'share' | 'task' | 'trun' | 'bg' | 'loop' | 'run';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomToken(20)}`;
}
