import t from 'tap';
import { WriteBatcher } from '../../src/platform/lib/write-batcher.js';

/** A write that waits until the test lets it finish (or fail). */
function controlledWrites() {
  const writes: { rows: number[]; finish: (error?: Error) => void }[] = [];
  const write = (rows: number[]) =>
    new Promise<void>((resolve, reject) => writes.push({ rows, finish: (e) => (e ? reject(e) : resolve()) }));
  return { writes, write };
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('a lone row is written at once; rows queued behind a write go in one write, in order', async (t) => {
  const { writes, write } = controlledWrites();
  const batcher = new WriteBatcher(write);
  const first = batcher.add(1);
  await tick();
  t.same(writes.map((w) => w.rows), [[1]], 'the first row does not wait for company');
  const rest = [2, 3, 4].map((n) => batcher.add(n));
  await tick();
  t.equal(writes.length, 1, 'one write in flight at a time');
  let firstDone = false;
  void first.then(() => (firstDone = true));
  writes[0].finish();
  await first;
  t.ok(firstDone, 'a row settles when its write is done');
  await tick();
  t.same(writes.map((w) => w.rows), [[1], [2, 3, 4]], 'what queued meanwhile is the next write');
  writes[1].finish();
  await Promise.all(rest);
});

t.test('rows added in the same tick share the write; `max` bounds a write', async (t) => {
  const { writes, write } = controlledWrites();
  const batcher = new WriteBatcher(write, 2);
  const all = [1, 2, 3].map((n) => batcher.add(n));
  await tick();
  t.same(writes.map((w) => w.rows), [[1, 2]]);
  writes[0].finish();
  await tick();
  t.same(writes.map((w) => w.rows), [[1, 2], [3]]);
  writes[1].finish();
  await Promise.all(all);
});

t.test('a failed write rejects its own row with its error, and the next write goes on', async (t) => {
  const { writes, write } = controlledWrites();
  const batcher = new WriteBatcher(write);
  const a = batcher.add(1);
  await tick();
  const b = batcher.add(2);
  writes[0].finish(new Error('disk full'));
  await t.rejects(a, { message: 'disk full' });
  await tick();
  t.same(writes.map((w) => w.rows), [[1], [2]], 'a lone row is not tried again; the row behind it is written on its own');
  writes[1].finish();
  await t.resolves(b, 'the row behind it settles');
});

t.test('a failed write of several rows writes each again on its own: a bad row fails alone', async (t) => {
  const written: number[][] = [];
  const batcher = new WriteBatcher(async (rows: number[]) => {
    written.push(rows);
    if (rows.includes(2)) throw new Error(`row 2 is bad (${rows.length} rows)`);
  });
  const results = await Promise.allSettled([1, 2, 3].map((n) => batcher.add(n)));
  t.same(written, [[1, 2, 3], [1], [2], [3]]);
  t.same(
    results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as Error).message)),
    ['ok', 'row 2 is bad (1 rows)', 'ok'],
  );
});
