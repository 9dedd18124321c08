import t from 'tap';
import { MemoryBus, type EventBus, type SessionEvent } from '../../src/infra/event-bus.js';
import { RedisBus } from '../../src/infra/redis-bus.js';

const ev = (session: string, seq: number): SessionEvent => ({ name: 'turn:patch', payload: { session_id: session, seq, text: `e${seq}` } });

/** What every adapter must do, on one node. */
function conformance(name: string, make: () => Promise<EventBus>) {
  t.test(`${name}: delivers in publish order to every subscriber; unsubscribe stops it`, async (t) => {
    const bus = await make();
    t.teardown(() => bus.close());
    const a: number[] = [];
    const b: number[] = [];
    const offA = bus.subscribe((e) => a.push(e.payload.seq));
    bus.subscribe((e) => b.push(e.payload.seq));
    for (let i = 1; i <= 500; i++) bus.publish(ev('s1', i));
    t.same(a, Array.from({ length: 500 }, (_, i) => i + 1), 'local subscribers get every event synchronously, in order');
    t.same(b, a);
    offA();
    bus.publish(ev('s1', 501));
    t.equal(a.length, 500, 'no event after unsubscribe');
    t.equal(b.at(-1), 501);
  });
}

conformance('memory', async () => new MemoryBus());

const url = process.env.TEST_REDIS_URL;
if (!url) {
  if (process.env.CI === 'true') t.fail('TEST_REDIS_URL is not set: CI must run the Redis adapter tests');
  else t.comment('skipped Redis adapter tests: TEST_REDIS_URL not set (npm test starts redis-server when it is installed)');
} else {
  const redis = async () => {
    const bus = new RedisBus(url);
    await bus.connected();
    return bus;
  };
  conformance('redis', redis);

  t.test('redis: a node receives every event another node publishes, in order, and not its own twice', async (t) => {
    const [n1, n2] = await Promise.all([redis(), redis()]);
    t.teardown(() => Promise.all([n1.close(), n2.close()]));
    const on1: string[] = [];
    const on2: string[] = [];
    n1.subscribe((e) => on1.push(`${e.payload.session_id}:${e.payload.seq}`));
    n2.subscribe((e) => on2.push(`${e.payload.session_id}:${e.payload.seq}`));
    for (let i = 1; i <= 300; i++) {
      n1.publish(ev('a', i));
      n2.publish(ev('b', i));
    }
    const deadline = Date.now() + 5000;
    while ((on1.length < 600 || on2.length < 600) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    for (const [name, got] of [['node 1', on1], ['node 2', on2]] as const) {
      t.equal(got.length, 600, `${name}: 600 events, each once`);
      for (const s of ['a', 'b']) {
        const seqs = got.filter((x) => x.startsWith(`${s}:`)).map((x) => Number(x.split(':')[1]));
        t.same(seqs, Array.from({ length: 300 }, (_, i) => i + 1), `${name}: session ${s} in order`);
      }
    }
  });
}
