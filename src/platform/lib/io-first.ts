/**
 * Work that can wait gives way to I/O: `wait()` settles in an iteration of the event loop where
 * the work let through so far has taken less than `budgetMs`; past that, in the next iteration,
 * after the loop has polled and handled the I/O that came meanwhile. Waiters go in arrival order.
 *
 * Written here because nothing maintained does it: `scheduler.yield()` of `timers/promises`
 * (experimental in Node 20) and a `setImmediate` per waiter let one waiter through per iteration,
 * which under load made 200 run starts take 2.3 s (bench/streaming.ts paced=200); queues such as
 * p-queue bound concurrency or a rate, not a share of each iteration.
 *
 * The budget is checked between waiters: a waiter let through runs on until its own next wait for
 * I/O, so an iteration can go past the budget by one waiter's step.
 */
export class IoFirstQueue {
  private waiting: (() => void)[] = [];
  private scheduled = false;
  /** When the current iteration's share began. */
  private since = 0;

  constructor(private readonly budgetMs: number) {}

  wait(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.iteration);
      }
    });
  }

  private readonly iteration = () => {
    this.since = performance.now();
    this.letOne();
  };

  /**
   * Let the next waiter through. Its step runs as a microtask queued now, so the check queued
   * after it runs once that step has reached its next wait.
   */
  private readonly letOne = () => {
    this.waiting.shift()?.();
    if (!this.waiting.length) this.scheduled = false;
    else if (performance.now() - this.since < this.budgetMs) queueMicrotask(this.letOne);
    else setImmediate(this.iteration);
  };
}
