import type { AppSocket } from '../server/gateway.js';
import type { EventBus, SessionEvent } from './events.js';

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

  remove(socketId: string, sessionId?: string) {
    for (const [sid, subs] of this.bySession) {
      if (sessionId && sid !== sessionId) continue;
      subs.delete(socketId);
      if (!subs.size) this.bySession.delete(sid);
    }
  }

  close() {
    this.off();
    this.bySession.clear();
  }
}

function send(sub: Sub, ev: SessionEvent) {
  if (ev.payload.seq <= sub.cursor) return;
  sub.cursor = ev.payload.seq;
  sub.socket.emit(ev.name, ev.payload);
}
