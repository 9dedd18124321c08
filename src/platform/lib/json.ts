/**
 * JSON for PostgreSQL: `jsonb` and `text` refuse the NUL character, which model output and tool
 * output may contain. NUL becomes U+FFFD, so storing a turn or an event never fails on it. The
 * common case (no NUL) costs one extra scan of the string.
 */
export function storableJson(value: unknown): string {
  const s = JSON.stringify(value);
  if (!s.includes('\\u0000')) return s;
  return JSON.stringify(value, (_k, v) => (typeof v === 'string' && v.includes('\0') ? v.replaceAll('\0', '\uFFFD') : v));
}

export function storableText(s: string): string {
  return s.includes('\0') ? s.replaceAll('\0', '\uFFFD') : s;
}
