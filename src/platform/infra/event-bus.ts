/**
 * The event bus port: how a session event published by the process that runs the session reaches
 * the processes whose sockets subscribe to it. In-process by default; a Redis adapter fans events
 * out across nodes (scale-out). Every adapter delivers a session's events in publish order.
 */

export interface SessionEvent {
  name: string;
  payload: { session_id: string; seq: number; [k: string]: unknown };
}

/**
 * When each event was emitted (epoch ms) on the node that runs its session, carried to other nodes
 * by the Redis bus: the event delivery lag metric reads it. Weak: it goes with the event.
 */
export const emittedAt = new WeakMap<SessionEvent, number>();

/** A message from one node to every node (e.g. stop a run whichever node owns it). */
export interface NodeSignal {
  name: string;
  data: Record<string, unknown>;
}

/** This node's interest in one session's events from other nodes (see EventBus.follow). */
export interface Following {
  /** Settles once other nodes' events of the session reach this node. */
  ready: Promise<void>;
  /** The interest ends (counted: the session is dropped when no one follows it any more). */
  stop(): void;
}

export interface EventBus {
  publish(ev: SessionEvent): void;
  /** Every event this node publishes, and other nodes' events of the sessions it follows. */
  subscribe(fn: (ev: SessionEvent) => void): () => void;
  /**
   * Receive other nodes' events of this session (a socket here watches it). A node receives only
   * the events of sessions it follows or runs, so adding nodes does not add traffic to each node.
   */
  follow(sessionId: string): Following;
  /** Send a signal to every node, this one included. */
  signal(sig: NodeSignal): void;
  onSignal(fn: (sig: NodeSignal) => void): () => void;
  /** False while events cannot cross nodes (Redis unreachable); the in-process bus is always healthy. */
  healthy(): boolean;
  close(): Promise<void>;
}

/** One process: a publish calls every subscriber synchronously. */
export class MemoryBus implements EventBus {
  private fns = new Set<(ev: SessionEvent) => void>();
  private signals = new Set<(sig: NodeSignal) => void>();
  /** One process: every event is here already. */
  follow(): Following {
    return { ready: Promise.resolve(), stop: () => {} };
  }
  signal(sig: NodeSignal) {
    for (const fn of this.signals) fn(sig);
  }
  onSignal(fn: (sig: NodeSignal) => void) {
    this.signals.add(fn);
    return () => this.signals.delete(fn);
  }
  healthy() {
    return true;
  }
  publish(ev: SessionEvent) {
    for (const fn of this.fns) fn(ev);
  }
  subscribe(fn: (ev: SessionEvent) => void) {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }
  async close() {
    this.fns.clear();
    this.signals.clear();
  }
}
