/**
 * IoFirstQueue (src/platform/lib/io-first.ts): waiters go in order, several in one iteration of the
 * event loop while their steps fit the budget, and the loop gets to its other work between shares.
 */
import t from 'tap';
import { IoFirstQueue } from '../../src/platform/lib/io-first.js';

/** A step that keeps the thread for `ms` (a run start's synchronous work). */
function busy(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

t.test('waiters go in order, a budget of steps per iteration, other work in between', async (t) => {
  const queue = new IoFirstQueue(3);
  // Counts the iterations of the event loop: one immediate per iteration while the waiters run.
  let iteration = 0;
  let done = false;
  const tick = () => {
    iteration++;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  const order: number[] = [];
  const at: number[] = [];
  await Promise.all(
    Array.from({ length: 30 }, async (_, i) => {
      await queue.wait();
      order.push(i);
      at.push(iteration);
      busy(1);
    }),
  );
  done = true;
  t.same(order, Array.from({ length: 30 }, (_, i) => i), 'in arrival order');
  const perIteration = new Map<number, number>();
  for (const it of at) perIteration.set(it, (perIteration.get(it) ?? 0) + 1);
  const most = Math.max(...perIteration.values());
  t.ok(most >= 2 && most <= 4, `1 ms steps under a 3 ms budget: 2 to 4 in one iteration (most: ${most})`);
  t.ok(perIteration.size >= 8, `the 30 steps spread over iterations, the loop ran in between (${perIteration.size} iterations)`);
});

t.test('a waiter alone goes on in the next iteration; the queue is reusable once empty', async (t) => {
  const queue = new IoFirstQueue(5);
  for (let round = 0; round < 3; round++) {
    let immediate = false;
    setImmediate(() => {
      immediate = true;
    });
    await queue.wait();
    t.equal(immediate, true, `round ${round + 1}: after the immediate queued before it`);
  }
});
