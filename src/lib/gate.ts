/**
 * At most `limit` holders at once; the others wait in arrival order. `enter` answers the function
 * that leaves (calling it again does nothing).
 */
export class Gate {
  private active = 0;
  private waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async enter(): Promise<() => void> {
    if (this.active < this.limit) this.active++;
    // The slot is handed over by the holder that leaves: `active` stays as it is.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
  }
}
