/**
 * The one way tests wait: poll a condition until it holds (a truthy value, answered), or fail
 * saying what was awaited. Never a fixed sleep where a condition can be observed.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, opts: { timeoutMs?: number; everyMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, everyMs = 10, what = 'a condition' } = opts;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
