import { z } from 'zod';

/**
 * PostgreSQL stores NUL in neither text nor jsonb, and jsonb refuses lone surrogates. Input holding
 * them is refused as a 422 naming the field, never left to fail as a 500 in the database.
 */
const UNSTORABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export const STORABLE_MSG = 'must not contain NUL characters or unpaired surrogates';

export function storable(v: unknown): boolean {
  if (typeof v === 'string') return !UNSTORABLE.test(v);
  if (Array.isArray(v)) return v.every(storable);
  if (v && typeof v === 'object') return Object.entries(v).every(([k, x]) => storable(k) && storable(x));
  return true;
}

/** A string a database column can hold, of at most `max` (and at least `min`) characters. */
export const text = (max: number, min = 0) => z.string().min(min).max(max).refine(storable, STORABLE_MSG);

/** How deep JSON input may nest (docs/errors.md): deeper is a 422 before any recursive walk meets it. */
export const MAX_JSON_DEPTH = 64;

/** Whether JSON text nests arrays/objects deeper than `max`: one pass over the text, no parse. */
export function jsonTextDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: the next character is escaped
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

/** Whether a parsed value nests arrays/objects deeper than `max`, walked without recursion. */
export function valueDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop() as [unknown, number];
    if (!v || typeof v !== 'object' || Buffer.isBuffer(v)) continue;
    if (d + 1 > max) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) if (x && typeof x === 'object') stack.push([x, d + 1]);
  }
  return false;
}
