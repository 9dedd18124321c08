/**
 * At most `limit` holders at once; the others wait in arrival order. `enter` answers the function
 * that leaves (calling it again does nothing). With `maxHoldMs`, a holder that has not left by then
 * gives its slot up anyway (and goes on without one): a holder stuck on something slow cannot keep
 * the ones behind it waiting.
 */
export class Gate {
  private active = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly maxHoldMs?: number,
  ) {}

  async enter(): Promise<() => void> {
    if (this.active < this.limit) this.active++;
    // The slot is handed over by the holder that leaves: `active` stays as it is.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (timer) clearTimeout(timer);
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
    const timer = this.maxHoldMs === undefined ? null : setTimeout(leave, this.maxHoldMs);
    timer?.unref();
    return leave;
  }
}
