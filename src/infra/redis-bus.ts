import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { EventBus, SessionEvent } from './event-bus.js';

const CHANNEL = 'agentsvc:events';

/**
 * The event bus across nodes, on Redis pub/sub. A publish reaches this node's subscribers at once
 * (no round trip) and every other node through Redis; a node skips its own messages coming back.
 * One publishing connection per node keeps each node's events in publish order.
 */
export class RedisBus implements EventBus {
  private readonly node = randomUUID();
  private fns = new Set<(ev: SessionEvent) => void>();
  private pub: Redis;
  private sub: Redis;
  private ready: Promise<unknown>;

  constructor(url: string, onError: (e: Error) => void = () => {}) {
    this.pub = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
    this.sub = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
    this.pub.on('error', onError);
    this.sub.on('error', onError);
    this.sub.on('message', (_channel: string, raw: string) => {
      let msg: { node: string; ev: SessionEvent };
      try {
        msg = JSON.parse(raw);
      } catch {
        return;
      }
      if (msg.node !== this.node) this.deliver(msg.ev);
    });
    this.ready = this.sub.subscribe(CHANNEL);
  }

  /** Resolves once this node receives other nodes' events. */
  async connected(): Promise<void> {
    await this.ready;
  }

  private deliver(ev: SessionEvent) {
    for (const fn of this.fns) fn(ev);
  }

  publish(ev: SessionEvent) {
    this.deliver(ev);
    void this.pub.publish(CHANNEL, JSON.stringify({ node: this.node, ev })).catch(() => {});
  }

  subscribe(fn: (ev: SessionEvent) => void) {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }

  async close() {
    this.fns.clear();
    await Promise.allSettled([this.sub.quit(), this.pub.quit()]);
  }
}
