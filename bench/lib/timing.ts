/** The p-th percentile of sorted samples (nearest rank). */
export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** `once` run `n` times one after another: each run's wall time in ms, sorted. */
export async function timed(n: number, once: () => Promise<unknown>): Promise<number[]> {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await once();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b);
}
