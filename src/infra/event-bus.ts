/**
 * The event bus port: how a session event published by the process that runs the session reaches
 * the processes whose sockets subscribe to it. In-process by default; a Redis adapter fans events
 * out across nodes (scale-out). Every adapter delivers a session's events in publish order.
 */

export interface SessionEvent {
  name: string;
  payload: { session_id: string; seq: number; [k: string]: unknown };
}

/** A message from one node to every node (e.g. stop a run whichever node owns it). */
export interface NodeSignal {
  name: string;
  data: Record<string, unknown>;
}

export interface EventBus {
  publish(ev: SessionEvent): void;
  subscribe(fn: (ev: SessionEvent) => void): () => void;
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
