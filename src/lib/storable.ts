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
