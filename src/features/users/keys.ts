import { createHash } from 'node:crypto';
import { randomToken } from '../../platform/lib/ids.js';

export const KEY_PREFIX = 'sk-agentsvc-v2-';
const KEY_RE = /^sk-agentsvc-v2-[0-9A-Za-z]{40}$/;

export function generateKey(): string {
  return KEY_PREFIX + randomToken(40);
}

/** Keys carry 238 bits of randomness, so a fast hash is enough: there is nothing to brute-force. */
export function hashKey(plaintext: string): string {
  return createHash('sha256').update(plaintext).digest('hex');
}

export function looksLikeKey(s: string): boolean {
  return KEY_RE.test(s);
}

export function mask(last4: string): string {
  return `${KEY_PREFIX}****${last4}`;
}
