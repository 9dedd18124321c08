import t from 'tap';
import { MemoryBus, type EventBus, type SessionEvent } from '../../src/platform/infra/event-bus.js';
import { RedisBus } from '../../src/platform/infra/redis-bus.js';
import { waitFor } from '../helpers/wait.js';
import { needs } from '../helpers/needs.js';

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

  t.test(`${name}: a signal reaches this node's listeners; healthy when connected`, async (t) => {
    const bus = await make();
    t.teardown(() => bus.close());
    const got: unknown[] = [];
    const off = bus.onSignal((s) => got.push(s));
    bus.signal({ name: 'stop', data: { session_id: 's1' } });
    t.same(got, [{ name: 'stop', data: { session_id: 's1' } }]);
    off();
    bus.signal({ name: 'stop', data: {} });
    t.equal(got.length, 1, 'no signal after unsubscribe');
    t.ok(bus.healthy());
  });
}

conformance('memory', async () => new MemoryBus());

const url = process.env.TEST_REDIS_URL;
if (!url) {
  needs(t, 'the Redis adapter tests', 'TEST_REDIS_URL is not set (npm test starts redis-server when it is installed)');
} else {
  const redis = async () => {
    const bus = new RedisBus(url);
    await bus.connected();
    return bus;
  };
  conformance('redis', redis);

  t.test('redis: a node receives every event of the sessions it follows, in order, and not its own twice', async (t) => {
    const [n1, n2] = await Promise.all([redis(), redis()]);
    t.teardown(() => Promise.all([n1.close(), n2.close()]));
    await Promise.all([n1.follow('b').ready, n2.follow('a').ready]);
    const on1: string[] = [];
    const on2: string[] = [];
    n1.subscribe((e) => on1.push(`${e.payload.session_id}:${e.payload.seq}`));
    n2.subscribe((e) => on2.push(`${e.payload.session_id}:${e.payload.seq}`));
    for (let i = 1; i <= 300; i++) {
      n1.publish(ev('a', i));
      n2.publish(ev('b', i));
    }
    await waitFor(() => on1.length >= 600 && on2.length >= 600, { timeoutMs: 5000, what: '600 events on each node' }).catch(() => {});
    for (const [name, got] of [['node 1', on1], ['node 2', on2]] as const) {
      t.equal(got.length, 600, `${name}: 600 events, each once`);
      for (const s of ['a', 'b']) {
        const seqs = got.filter((x) => x.startsWith(`${s}:`)).map((x) => Number(x.split(':')[1]));
        t.same(seqs, Array.from({ length: 300 }, (_, i) => i + 1), `${name}: session ${s} in order`);
      }
    }
  });

  t.test('redis: a node receives only the sessions it follows, until it stops following', async (t) => {
    const [n1, n2] = await Promise.all([redis(), redis()]);
    t.teardown(() => Promise.all([n1.close(), n2.close()]));
    const got: string[] = [];
    n2.subscribe((e) => got.push(`${e.payload.session_id}:${e.payload.seq}`));
    const watched = n2.follow('watched');
    const twice = n2.follow('watched'); // a second socket on the same node
    await watched.ready;
    n1.publish(ev('other', 1));
    n1.publish(ev('watched', 1));
    await waitFor(() => got.includes('watched:1'), { what: 'the watched session event' });
    watched.stop();
    n1.publish(ev('watched', 2));
    await waitFor(() => got.includes('watched:2'), { what: 'the event while one follower is left' });
    twice.stop();
    twice.stop(); // stopping twice counts once
    const before = n2.receivedBytes;
    // Unsubscribed once the last follower stops: a marker on a followed session proves the rest came through.
    await n2.follow('marker').ready;
    n1.publish(ev('watched', 3));
    n1.publish(ev('marker', 1));
    await waitFor(() => got.includes('marker:1'), { what: 'the marker' });
    t.same(got, ['watched:1', 'watched:2', 'marker:1'], 'nothing of sessions it does not follow');
    t.ok(n2.receivedBytes > before, 'bytes are counted');
  });

  t.test('redis: a signal from one node reaches the other once', async (t) => {
    const [n1, n2] = await Promise.all([redis(), redis()]);
    t.teardown(() => Promise.all([n1.close(), n2.close()]));
    const on1: unknown[] = [];
    const on2: unknown[] = [];
    n1.onSignal((s) => on1.push(s.data.n));
    n2.onSignal((s) => on2.push(s.data.n));
    n1.signal({ name: 'stop', data: { n: 1 } });
    // A second signal marks the end: signals keep their order, so a duplicate of the first would
    // have arrived before it.
    n1.signal({ name: 'stop', data: { n: 2 } });
    await waitFor(() => on1.includes(2) && on2.includes(2), { timeoutMs: 3000, what: 'the marker signal on both nodes' });
    t.same(on1, [1, 2], 'the sender once');
    t.same(on2, [1, 2], 'the other node once');
  });

  t.test('redis: healthy() follows the connection', async (t) => {
    let failures = 0;
    const bus = new RedisBus('redis://127.0.0.1:1', () => void failures++);
    t.teardown(() => bus.close());
    await waitFor(() => failures > 0, { what: 'a failed connection attempt' });
    t.notOk(bus.healthy(), 'not healthy when Redis is unreachable');
    bus.publish(ev('x', 1));
  });
}
