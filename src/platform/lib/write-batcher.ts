/**
 * Rows written together. `add` queues one and settles once the write that took it is done (it
 * rejects with that write's error). One write is in flight at a time; the next takes what queued
 * meanwhile, up to `max` rows. A lone row is written at once; 200 runs that start together cost a
 * few statements, not 200 round trips that each wake the database and the event loop. When a write
 * of several rows fails, each is written again on its own: a bad row fails alone.
 */
export class WriteBatcher<T> {
  private pending: { item: T; settle: (error?: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly max = 100,
  ) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      if (this.writing) return;
      this.writing = true;
      // After the current task: rows added in the same tick go in the same statement.
      queueMicrotask(() => void this.drain());
    });
  }

  private async drain() {
    while (this.pending.length) {
      const batch = this.pending.splice(0, this.max);
      const error = await this.attempt(batch.map((b) => b.item));
      if (error === undefined || batch.length === 1) for (const b of batch) b.settle(error);
      else for (const b of batch) b.settle(await this.attempt([b.item]));
    }
    this.writing = false;
  }

  /** The write's error, or undefined once it is done. */
  private async attempt(items: T[]): Promise<unknown> {
    try {
      await this.write(items);
      return undefined;
    } catch (e) {
      return e ?? new Error('the batched write failed');
    }
  }
}
