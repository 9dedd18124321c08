import t from 'tap';
import { Gate } from '../../src/platform/lib/gate.js';

t.test('at most `limit` inside; the others enter in arrival order; leaving twice frees one slot', async (t) => {
  const gate = new Gate(2);
  const order: number[] = [];
  let inside = 0;
  let most = 0;
  const leaves: (() => void)[] = [];
  const entered = Array.from({ length: 6 }, (_, i) =>
    gate.enter().then((leave) => {
      order.push(i);
      inside++;
      most = Math.max(most, inside);
      leaves[i] = () => {
        inside--;
        leave();
        leave();
      };
    }),
  );
  await new Promise((r) => setImmediate(r));
  t.same(order, [0, 1], 'two enter at once, the third waits');
  leaves[1]();
  await new Promise((r) => setImmediate(r));
  t.same(order, [0, 1, 2], 'a leave lets exactly the next one in (leaving twice counts once)');
  for (const i of [0, 2, 3, 4, 5]) {
    await new Promise((r) => setImmediate(r));
    leaves[i]?.();
  }
  await Promise.all(entered);
  t.same(order, [0, 1, 2, 3, 4, 5], 'first come, first served');
  t.equal(most, 2, 'never more than the limit inside');
  for (const l of leaves) l?.();
  const again = await Promise.race([gate.enter().then(() => 'entered'), new Promise((r) => setTimeout(() => r('blocked'), 50))]);
  t.equal(again, 'entered', 'every slot is free again');
});

t.test('maxHoldMs: a holder that does not leave gives its slot to the next one in time', async (t) => {
  const gate = new Gate(1, 100);
  // The gate's timer does not keep a process alive (unref); this test's wait must.
  const alive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(alive));
  const t0 = performance.now();
  const stuck = await gate.enter();
  const next = await gate.enter();
  const waited = performance.now() - t0;
  t.ok(waited >= 90 && waited < 2000, `the second entered after ${waited.toFixed(0)} ms, once the first one's hold ran out`);
  stuck();
  const third = gate.enter().then(() => 'entered');
  t.equal(await Promise.race([third, new Promise((r) => setTimeout(() => r('blocked'), 50))]), 'blocked', "the late leave of the first one frees nothing: its slot was handed over already");
  next();
  t.equal(await Promise.race([third, new Promise((r) => setTimeout(() => r('blocked'), 50))]), 'entered', 'a real leave hands the slot on');
});
