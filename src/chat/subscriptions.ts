import type { AppSocket } from '../server/gateway.js';
import type { EventBus, SessionEvent } from '../infra/event-bus.js';

interface Sub {
  socket: AppSocket;
  /** Last seq delivered; live events at or below it are duplicates and dropped. */
  cursor: number;
  /** Live events held while a replay is being sent. */
  held: SessionEvent[] | null;
}

/**
 * Which local sockets receive which session's events. Delivery is per socket (not a room
 * broadcast) so each subscriber's cursor can guarantee "nothing lost, nothing repeated" across
 * a replay.
 */
export class Subscriptions {
  private bySession = new Map<string, Map<string, Sub>>();
  private bySocket = new Map<string, Set<string>>();
  private off: () => void;

  constructor(bus: EventBus) {
    this.off = bus.subscribe((ev) => this.deliver(ev));
  }

  private deliver(ev: SessionEvent) {
    const subs = this.bySession.get(ev.payload.session_id);
    if (!subs) return;
    for (const sub of subs.values()) {
      if (sub.held) sub.held.push(ev);
      else send(sub, ev);
    }
  }

  /** Start holding live events for this socket; returns a function that finishes the subscription. */
  add(socket: AppSocket, sessionId: string, cursor: number) {
    let subs = this.bySession.get(sessionId);
    if (!subs) this.bySession.set(sessionId, (subs = new Map()));
    const sub: Sub = { socket, cursor, held: [] };
    subs.set(socket.id, sub);
    let mine = this.bySocket.get(socket.id);
    if (!mine) this.bySocket.set(socket.id, (mine = new Set()));
    mine.add(sessionId);
    return {
      replay: (events: SessionEvent[]) => events.forEach((ev) => send(sub, ev)),
      setCursor: (seq: number) => (sub.cursor = seq),
      live: () => {
        const held = sub.held ?? [];
        sub.held = null;
        held.forEach((ev) => send(sub, ev));
      },
    };
  }

  /** How many sessions one socket is subscribed to. */
  count(socketId: string): number {
    return this.bySocket.get(socketId)?.size ?? 0;
  }

  remove(socketId: string, sessionId?: string) {
    const mine = this.bySocket.get(socketId);
    if (!mine) return;
    for (const sid of sessionId ? [sessionId] : [...mine]) {
      mine.delete(sid);
      const subs = this.bySession.get(sid);
      subs?.delete(socketId);
      if (subs && !subs.size) this.bySession.delete(sid);
    }
    if (!mine.size) this.bySocket.delete(socketId);
  }

  close() {
    this.off();
    this.bySession.clear();
    this.bySocket.clear();
  }
}

function send(sub: Sub, ev: SessionEvent) {
  if (ev.payload.seq <= sub.cursor) return;
  sub.cursor = ev.payload.seq;
  sub.socket.emit(ev.name, ev.payload);
}
