/**
 * The event bus port: how a session event published by the process that runs the session reaches
 * the processes whose sockets subscribe to it. In-process by default; a Redis adapter fans events
 * out across nodes (scale-out). Every adapter delivers a session's events in publish order.
 */

export interface SessionEvent {
  name: string;
  payload: { session_id: string; seq: number; [k: string]: unknown };
}

export interface EventBus {
  publish(ev: SessionEvent): void;
  subscribe(fn: (ev: SessionEvent) => void): () => void;
  close(): Promise<void>;
}

/** One process: a publish calls every subscriber synchronously. */
export class MemoryBus implements EventBus {
  private fns = new Set<(ev: SessionEvent) => void>();
  publish(ev: SessionEvent) {
    for (const fn of this.fns) fn(ev);
  }
  subscribe(fn: (ev: SessionEvent) => void) {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }
  async close() {
    this.fns.clear();
  }
}
