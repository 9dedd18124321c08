import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type EventBus, emittedAt, type Following, type NodeSignal, type SessionEvent } from './event-bus.js';

/** One channel per session: a node subscribes to the sessions its sockets watch. */
const SESSION_CHANNEL = 'agentsvc:session:';
const SIGNALS = 'agentsvc:signals';
const MAX_QUEUED = 100_000;

/**
 * The event bus across nodes, on Redis pub/sub. A publish reaches this node's subscribers at once
 * (no round trip) and, through the session's own channel, the other nodes that follow the session
 * (a socket there watches it); a node skips its own messages coming back. One publishing connection
 * per node keeps each node's events in publish order. Signals (stop a run wherever it runs) go to
 * every node on one channel. ioredis subscribes again to every channel after a reconnect.
 */
export class RedisBus implements EventBus {
  private readonly node = randomUUID();
  private fns = new Set<(ev: SessionEvent) => void>();
  private signals = new Set<(sig: NodeSignal) => void>();
  private pub: Redis;
  private sub: Redis;
  private ready: Promise<unknown>;
  private queued = 0;
  /** Bytes of session events this node has received from Redis (channel and message). */
  receivedBytes = 0;
  private readonly followers = new Map<string, { count: number; ready: Promise<void> }>();

  constructor(url: string, onError: (e: Error) => void = () => {}) {
    this.pub = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
    this.sub = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
    this.pub.on('error', onError);
    this.sub.on('error', onError);
    this.sub.on('message', (channel: string, raw: string) => {
      this.receivedBytes += channel.length + Buffer.byteLength(raw);
      let msg: { node: string; ev?: SessionEvent; at?: number; sig?: NodeSignal };
      try {
        msg = JSON.parse(raw);
      } catch {
        return;
      }
      if (msg.node === this.node) return;
      if (msg.ev && channel.startsWith(SESSION_CHANNEL)) {
        if (typeof msg.at === 'number') emittedAt.set(msg.ev, msg.at);
        this.deliver(msg.ev);
      }
      else if (channel === SIGNALS && msg.sig) for (const fn of this.signals) fn(msg.sig);
    });
    this.ready = this.sub.subscribe(SIGNALS);
  }

  /** Both connections up: events and signals cross nodes. */
  healthy(): boolean {
    return this.pub.status === 'ready' && this.sub.status === 'ready';
  }

  /** Resolves once this node receives other nodes' events and its publishing connection is up. */
  async connected(): Promise<void> {
    await this.ready;
    // The subscription can be ready before the publishing connection is: healthy() needs both.
    if (this.pub.status !== 'ready') await new Promise<void>((resolve) => this.pub.once('ready', () => resolve()));
  }

  private deliver(ev: SessionEvent) {
    for (const fn of this.fns) fn(ev);
  }

  publish(ev: SessionEvent) {
    this.deliver(ev);
    this.send(SESSION_CHANNEL + ev.payload.session_id, { node: this.node, ev, at: emittedAt.get(ev) });
  }

  follow(sessionId: string): Following {
    let f = this.followers.get(sessionId);
    if (!f) {
      const ready = this.sub.subscribe(SESSION_CHANNEL + sessionId).then(
        () => {},
        () => {}, // Redis away: ioredis subscribes again on reconnect; the log fills the gap.
      );
      this.followers.set(sessionId, (f = { count: 0, ready }));
    }
    f.count++;
    let stopped = false;
    return {
      ready: f.ready,
      stop: () => {
        if (stopped) return;
        stopped = true;
        const cur = this.followers.get(sessionId);
        if (!cur || --cur.count > 0) return;
        this.followers.delete(sessionId);
        void this.sub.unsubscribe(SESSION_CHANNEL + sessionId).catch(() => {});
      },
    };
  }

  signal(sig: NodeSignal) {
    for (const fn of this.signals) fn(sig);
    this.send(SIGNALS, { node: this.node, sig });
  }

  /**
   * While Redis is away, ioredis queues what is published and sends it on reconnect (other nodes
   * then catch up; their subscribers fill any gap from the event log). The queue is bounded: past
   * MAX_QUEUED, messages for other nodes are dropped, never this node's memory.
   */
  private send(channel: string, msg: unknown) {
    if (this.queued >= MAX_QUEUED) return;
    this.queued++;
    this.pub
      .publish(channel, JSON.stringify(msg))
      .catch(() => {})
      .finally(() => this.queued--);
  }

  onSignal(fn: (sig: NodeSignal) => void) {
    this.signals.add(fn);
    return () => this.signals.delete(fn);
  }

  subscribe(fn: (ev: SessionEvent) => void) {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }

  async close() {
    this.fns.clear();
    this.followers.clear();
    this.signals.clear();
    // quit() waits for a reply that never comes while Redis is unreachable: then just disconnect.
    await Promise.allSettled([this.sub, this.pub].map((c) => (c.status === 'ready' ? c.quit() : c.disconnect())));
  }
}
