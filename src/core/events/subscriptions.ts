import type { EventBus, Following, SessionEvent } from '../../platform/infra/event-bus.js';
import type { Payload } from './protocol.js';
import { type ProtocolSocket, sendLogged } from './sockets.js';

interface Sub {
  socket: ProtocolSocket;
  /** Last seq delivered; live events at or below it are duplicates and dropped. */
  cursor: number;
  /** Live events held while a replay is being sent, or while a gap is filled from the log. */
  held: SessionEvent[] | null;
  /** Unsubscribed: a gap fill still under way sends nothing more. */
  gone?: boolean;
}

/** Reads stored events with seq > after (the event log), to fill a gap in live delivery. */
export type EventFetch = (sessionId: string, after: number, limit: number) => Promise<SessionEvent[]>;

/** How long a gap may wait for the events before it to be stored by the node that runs the session. */
const GAP_WAIT_MS = 3000;

/**
 * Which local sockets receive which session's events. Delivery is per socket (not a room
 * broadcast) so each subscriber's cursor can guarantee "nothing lost, nothing repeated" across
 * a replay. With several nodes, a live event can arrive ahead of ones this node has not seen (they
 * were published before the subscription, or by another node's connection, and are still on their
 * way to the log): the socket's later events are held while the missing ones are read from the log.
 */
export class Subscriptions {
  private bySession = new Map<string, Map<string, Sub>>();
  private bySocket = new Map<string, Set<string>>();
  private off: () => void;
  /** This node's interest in the sessions its sockets watch (other nodes' events reach it). */
  private readonly following = new Map<string, Following>();

  constructor(
    private readonly bus: EventBus,
    private readonly fetch?: EventFetch,
    /** The session's turns, for a session:resync over a hole no event will fill. */
    private readonly turns?: (sessionId: string) => Promise<Payload<'session:resync'>['turns']>,
  ) {
    this.off = bus.subscribe((ev) => this.deliver(ev));
  }

  private deliver(ev: SessionEvent) {
    const subs = this.bySession.get(ev.payload.session_id);
    if (!subs) return;
    for (const sub of subs.values()) this.send(sub, ev);
  }

  private send(sub: Sub, ev: SessionEvent) {
    if (sub.held) {
      sub.held.push(ev);
      return;
    }
    if (ev.payload.seq <= sub.cursor) return;
    if (this.fetch && ev.payload.seq > sub.cursor + 1) {
      sub.held = [ev];
      void this.fill(sub, ev.payload.session_id);
      return;
    }
    emit(sub, ev);
  }

  /** Read the events between the cursor and the first held one from the log, then send the held ones. */
  private async fill(sub: Sub, sessionId: string) {
    const deadline = Date.now() + GAP_WAIT_MS;
    for (;;) {
      const target = (sub.held?.[0]?.payload.seq ?? 0) - 1;
      if (sub.gone || sub.cursor >= target || Date.now() > deadline) break;
      const got = await (this.fetch as EventFetch)(sessionId, sub.cursor, Math.min(target - sub.cursor, 1000)).catch(() => []);
      for (const e of got) if (!sub.gone && e.payload.seq === sub.cursor + 1 && e.payload.seq <= target) emit(sub, e);
      // A session's events are written in seq order by the one process that runs it: a stored one
      // past the cursor once the ones that follow it are sent means the ones between never will be.
      if (got.some((e) => e.payload.seq > sub.cursor)) break;
      if (sub.cursor < target && got.length === 0) await new Promise((r) => setTimeout(r, 25));
    }
    // Past the deadline the missing events were never stored (their node died first, or their
    // write failed): the client gets the turns as they are now in a session:resync, then goes on.
    const target = (sub.held?.[0]?.payload.seq ?? 0) - 1;
    if (!sub.gone && sub.cursor < target) {
      const turns = await this.turns?.(sessionId).catch(() => null);
      if (turns && !sub.gone) sub.socket.emit('session:resync', { session_id: sessionId, seq: target, turns });
      sub.cursor = target;
    }
    const held = sub.held ?? [];
    sub.held = null;
    if (!sub.gone) for (const e of held) this.send(sub, e);
  }

  /** Start holding live events for this socket; returns a function that finishes the subscription. */
  add(socket: ProtocolSocket, sessionId: string, cursor: number) {
    let subs = this.bySession.get(sessionId);
    if (!subs) {
      this.bySession.set(sessionId, (subs = new Map()));
      this.following.set(sessionId, this.bus.follow(sessionId));
    }
    const sub: Sub = { socket, cursor, held: [] };
    subs.set(socket.id, sub);
    let mine = this.bySocket.get(socket.id);
    if (!mine) this.bySocket.set(socket.id, (mine = new Set()));
    mine.add(sessionId);
    return {
      /** Settles once other nodes' events of the session reach this node (read positions after it). */
      following: this.following.get(sessionId)?.ready ?? Promise.resolve(),
      replay: (events: SessionEvent[]) => events.forEach((ev) => ev.payload.seq > sub.cursor && emit(sub, ev)),
      setCursor: (seq: number) => (sub.cursor = seq),
      live: () => {
        if (sub.gone) return;
        const held = sub.held ?? [];
        sub.held = null;
        for (const ev of held) this.send(sub, ev);
      },
    };
  }

  /**
   * A subscription of this socket to this session goes on from its own position (moved up to
   * `since`, events the client says it has); false when there is none.
   */
  continueAt(socketId: string, sessionId: string, since?: number): boolean {
    const sub = this.bySession.get(sessionId)?.get(socketId);
    if (!sub) return false;
    if (since !== undefined && since > sub.cursor) sub.cursor = since;
    return true;
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
      const sub = subs?.get(socketId);
      if (sub) sub.gone = true;
      subs?.delete(socketId);
      if (subs && !subs.size) {
        this.bySession.delete(sid);
        this.following.get(sid)?.stop();
        this.following.delete(sid);
      }
    }
    if (!mine.size) this.bySocket.delete(socketId);
  }

  /**
   * Ask again whether each subscriber may still read what it watches (docs/identity.md, "When read
   * access goes"): the subscriptions of `which.userId`'s sockets, or of `which.sessionId`, or (an
   * empty `which`) all of them. `refusal` answers null for one still readable, else the code and
   * message a subscribe would be refused with now; that subscription ends here and its socket is
   * told `session:closed`, after which nothing of the session reaches it. Answers how many ended.
   */
  async recheck(which: { userId?: string; sessionId?: string }, refusal: (userId: string, sessionId: string) => Promise<{ code: string; message: string } | null>): Promise<number> {
    const userOf = (sub: Sub): string | undefined => sub.socket.data?.user?.id;
    const watched = [...this.bySession].filter(([sid]) => which.sessionId === undefined || sid === which.sessionId);
    const pairs = watched.flatMap(([sid, subs]) => [...subs.values()].filter((s) => which.userId === undefined || userOf(s) === which.userId).map((s) => ({ sid, sub: s })));
    let ended = 0;
    for (const { sid, sub } of pairs) {
      const userId = userOf(sub);
      const refused = userId === undefined ? null : await refusal(userId, sid).catch(() => null);
      // Gone meanwhile (unsubscribed, disconnected, or subscribed anew: a new check decided that one).
      if (!refused || this.bySession.get(sid)?.get(sub.socket.id) !== sub) continue;
      this.remove(sub.socket.id, sid);
      sub.socket.emit('session:closed', { session_id: sid, code: refused.code, message: refused.message });
      ended++;
    }
    return ended;
  }

  close() {
    this.off();
    for (const f of this.following.values()) f.stop();
    this.following.clear();
    this.bySession.clear();
    this.bySocket.clear();
  }
}

function emit(sub: Sub, ev: SessionEvent) {
  sub.cursor = ev.payload.seq;
  sendLogged(sub.socket, ev);
}
