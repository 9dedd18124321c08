import t from 'tap';
import type { EventStore } from '../../src/core/events/event-store.js';
import { EventLog, SEQ_BLOCK } from '../../src/core/events/events.js';
import { MemoryBus, type SessionEvent } from '../../src/platform/infra/event-bus.js';

/** A store whose batch inserts wait until released: what is written, one batch at a time. */
function slowStore() {
  const batches: number[][] = [];
  const waiting: (() => void)[] = [];
  const store = {
    appendBatch: async (batch: SessionEvent[]) => {
      await new Promise<void>((r) => waiting.push(r));
      batches.push(batch.map((e) => e.payload.seq));
    },
    append: async () => {},
    purgeOlderThan: async () => {},
  } as unknown as EventStore;
  /** Settles once an insert is in flight. */
  const started = async () => {
    while (!waiting.length) await new Promise((r) => setImmediate(r));
  };
  /** Let the next insert finish, once it has started. */
  const release = async () => {
    await started();
    waiting.shift()?.();
  };
  return { store, batches, started, release };
}

const open = (log: EventLog, sid: string) => log.open(sid, { last: 0, reserved: SEQ_BLOCK * 10, extend: async () => true });

t.test('flushes asked while a write is in flight share one write, which stores all they asked for', async (t) => {
  const { store, batches, started, release } = slowStore();
  const log = new EventLog(store, new MemoryBus(), { ttlHours: 1, flushMs: 60_000 });
  t.teardown(() => log.close());
  open(log, 's1');
  log.emit('s1', 'turn:patch', { data: { text_delta: 'a' } });
  const first = log.flush();
  await started();
  // 50 runs end while the first insert is in flight: each emits its last event and flushes.
  const ends: Promise<void>[] = [];
  for (let i = 0; i < 50; i++) {
    open(log, `e${i}`);
    log.emit(`e${i}`, 'chat:end', { status: 'completed' });
    ends.push(log.flush());
  }
  let settled = 0;
  for (const p of ends) void p.then(() => settled++);
  await release();
  await first;
  t.same(batches, [[1]], 'the write in flight took only what was pending when it started');
  t.equal(settled, 0, 'no later flush settles before its events are written');
  await release();
  await Promise.all(ends);
  t.same(
    batches.map((b) => b.length),
    [1, 50],
    'the 50 flushes cost one insert holding every event they asked for, not 50 chained ones',
  );
});

t.test('a write stays bounded in events: what piled up goes in several batches', async (t) => {
  const { store, batches, started, release } = slowStore();
  const log = new EventLog(store, new MemoryBus(), { ttlHours: 1, flushMs: 60_000, maxBatch: 10 });
  t.teardown(() => log.close());
  open(log, 's1');
  log.emit('s1', 'turn:patch', { data: { text_delta: 'a' } });
  const first = log.flush();
  await started();
  for (let i = 0; i < 25; i++) log.emit('s1', 'turn:patch', { data: { text_delta: 'b' } });
  const second = log.flush();
  for (let i = 0; i < 4; i++) await release();
  await first;
  await second;
  t.same(
    batches.map((b) => b.length),
    [1, 10, 10, 5],
    'batches of at most maxBatch, in seq order',
  );
  t.same(batches.flat(), Array.from({ length: 26 }, (_, i) => i + 1), 'every seq once, in order');
});
