/**
 * A per-user token bucket for REST requests: `perMinute` tokens, refilled continuously, so a
 * client may burst up to the whole minute's allowance and then goes on at perMinute/60 per
 * second. In-process: with several nodes each enforces its own bucket (a bound per node).
 */
export class RateLimiter {
  private buckets = new Map<string, { tokens: number; at: number }>();
  private sweeps = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one token for `key`: 0 when allowed, else the seconds to wait (for Retry-After). */
  take(key: string): number {
    if (this.perMinute <= 0) return 0;
    const now = this.now();
    const rate = this.perMinute / 60_000; // tokens per ms
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * rate);
    b.at = now;
    this.buckets.set(key, b);
    if (++this.sweeps % 10_000 === 0) this.sweep(now, rate);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000));
  }

  /** Full buckets carry no state worth keeping: drop them so idle users cost no memory. */
  private sweep(now: number, rate: number) {
    for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) * rate >= this.perMinute) this.buckets.delete(k);
  }
}
