import { type EventBus, emittedAt, type SessionEvent } from '../../platform/infra/event-bus.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { EventStore } from './event-store.js';
import { EveryMinute } from './run-failure.js';

export type { SessionEvent } from '../../platform/infra/event-bus.js';

const MAX_BATCH_CHARS = 1 << 20;

/** The text a patch carries (a delta, a tool result): what makes an event large. */
function textOf(data: Record<string, unknown>): number {
  const d = data.data;
  let n = 0;
  if (d && typeof d === 'object') for (const v of Object.values(d)) if (typeof v === 'string') n += v.length;
  return n;
}

/**
 * Seqs reserved at a time (sessions.last_seq, durably, before any of them is sent). After a crash
 * the next run continues above the reservation, so a seq a client may have seen is never given to
 * another event; the cost is a hole of at most this many seqs in a crashed run's stream.
 */
export const SEQ_BLOCK = 1000;

/**
 * Where a session's seqs start and how they are reserved: `last` is the last seq given (or
 * possibly sent) before; seqs up to `reserved` are durably reserved; `extend(upTo)` raises the
 * reservation and answers false when this process no longer owns the run.
 */
export interface SeqStart {
  last: number;
  reserved: number;
  extend: (upTo: number) => Promise<boolean>;
}

interface Counter {
  seq: number;
  reserved: number;
  extend: SeqStart['extend'];
  /** The reservation being written, if any. */
  extending: Promise<void> | null;
  /** Events given a seq above `reserved`: sent once the reservation holds them. */
  held: SessionEvent[];
  /** Another process took the run over: nothing more of it is stored or sent. */
  lost: boolean;
}

/**
 * Session events: every event gets the session's next `seq`, is published at once to live
 * subscribers, and is written to session_events in batches (one multi-row insert per flush), so a
 * streaming run costs one INSERT per ~20 ms rather than one per text delta. Publishing before
 * storing is safe because seqs are reserved durably ahead, in blocks (SEQ_BLOCK): an event is
 * published only under the reservation, so a restart never reuses a seq a client may have seen.
 * Replay first flushes, so nothing published is missing from the log it reads.
 */
export class EventLog {
  private seqs = new Map<string, Counter>();
  private pending: SessionEvent[] = [];
  private pendingChars = 0;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** The write queued behind the one in flight: every flush asked meanwhile shares it (group commit). */
  private queued: Promise<void> | null = null;
  private purgeTimer: NodeJS.Timeout;
  private readonly dropped: EveryMinute;
  private lostListeners = new Set<(sessionId: string, error: unknown) => void>();

  constructor(
    private readonly store: EventStore,
    readonly bus: EventBus,
    private readonly opts: { ttlHours: number; flushMs?: number; maxBatch?: number; logger?: Logger },
  ) {
    this.dropped = new EveryMinute(opts.logger, 'events could not be stored');
    this.purgeTimer = setInterval(() => void this.purge().catch(() => {}), 3600_000);
    this.purgeTimer.unref();
  }

  /**
   * Open the session's counter; required before emitting for a session. `start`: where its seqs
   * start and how they are reserved (the run claim reserves its first block in the same statement).
   * Its `last` was read with the reservation, which bounds every seq sent before (by any node, a
   * dead one included), and the claim that read it may have stored its first events right after
   * it: the counter starts there.
   */
  open(sessionId: string, start: SeqStart): number {
    const known = this.seqs.get(sessionId);
    if (known !== undefined) return known.seq;
    this.seqs.set(sessionId, { seq: start.last, reserved: start.reserved, extend: start.extend, extending: null, held: [], lost: false });
    return start.last;
  }

  /** Forget the in-memory counter (the run ended; another node may own the next one). */
  release(sessionId: string) {
    this.seqs.delete(sessionId);
  }

  current(sessionId: string): number | undefined {
    return this.seqs.get(sessionId)?.seq;
  }

  /** The session's last seq: the live counter when this process runs it, else the stored maximum. */
  async latest(sessionId: string): Promise<number> {
    const live = this.seqs.get(sessionId);
    if (live !== undefined) return live.seq;
    await this.flush();
    return Math.max(await this.store.maxSeq(sessionId), this.seqs.get(sessionId)?.seq ?? 0);
  }

  /**
   * `publish: false` stores the event without sending it: the caller makes its seq durable (the
   * run's release records it) and publishes it later (`publish`). `stored`: the event is in the log
   * already, with this seq (a run's first events, stored by its claim): it is only sent.
   */
  emit(sessionId: string, name: string, data: Record<string, unknown> = {}, opts: { publish?: boolean; stored?: boolean } = {}): SessionEvent {
    const c = this.seqs.get(sessionId);
    if (c === undefined) throw new Error(`event log not opened for ${sessionId}`);
    const seq = ++c.seq;
    const ev: SessionEvent = { name, payload: { session_id: sessionId, seq, ...data } };
    emittedAt.set(ev, Date.now());
    if (c.lost) return ev;
    if (!opts.stored) this.queue(ev, data);
    if (seq > c.reserved - SEQ_BLOCK / 2) this.reserveAhead(sessionId, c);
    if (opts.publish === false) return ev;
    if (seq > c.reserved || c.held.length) c.held.push(ev);
    else this.bus.publish(ev);
    return ev;
  }

  /** Into the next write batch. */
  private queue(ev: SessionEvent, data: Record<string, unknown>) {
    this.pending.push(ev);
    this.pendingChars += textOf(data);
    // A batch is one JSON text built at once: bounded in events and in text, so no flush stalls.
    if (this.pending.length >= (this.opts.maxBatch ?? 500) || this.pendingChars >= MAX_BATCH_CHARS) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.opts.flushMs ?? 20);
  }

  /** Send an event emitted with `publish: false`, once its seq is durable (after what it waited behind). */
  publish(ev: SessionEvent) {
    const c = this.seqs.get(ev.payload.session_id);
    if (c?.lost) return;
    if (c) this.sendHeld(c, ev.payload.seq);
    this.bus.publish(ev);
  }

  private sendHeld(c: Counter, upTo: number) {
    let n = 0;
    while (n < c.held.length && c.held[n].payload.seq <= upTo) this.bus.publish(c.held[n++]);
    if (n) c.held.splice(0, n);
  }

  /** Settles when no reservation of the session is being written (before its run records its end). */
  async reserving(sessionId: string): Promise<void> {
    await this.seqs.get(sessionId)?.extending;
  }

  /** Raise the session's reservation by a block, in the background; held events go out once it holds. */
  private reserveAhead(sessionId: string, c: Counter) {
    if (c.extending || c.lost) return;
    const upTo = c.seq + SEQ_BLOCK;
    c.extending = c.extend(upTo).then(
      (owned) => {
        c.extending = null;
        if (!owned) {
          c.lost = true;
          c.held = [];
          this.opts.logger?.warn({ session_id: sessionId }, 'another process took this run over; its further events are dropped');
          return;
        }
        c.reserved = Math.max(c.reserved, upTo);
        this.sendHeld(c, c.reserved);
        if (c.seq > c.reserved - SEQ_BLOCK / 2 && this.seqs.get(sessionId) === c) this.reserveAhead(sessionId, c);
      },
      (e) => {
        c.extending = null;
        this.opts.logger?.error({ ...errField(e), session_id: sessionId }, 'could not reserve seqs; retrying');
        // Held events wait for the reservation: try again while the run is still here.
        setTimeout(() => this.seqs.get(sessionId) === c && this.reserveAhead(sessionId, c), 500).unref();
      },
    );
  }

  /**
   * Store every event emitted so far; settles once they are in the log. Writes go one at a time:
   * a flush asked while one is in flight joins the write queued behind it, which takes whatever is
   * pending when it starts. So the ends of 200 runs that come together (each flushes before its
   * chat:end) cost a few inserts, not a chain of 200 that each waits for all before it.
   */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.queued) this.flushing = this.queued = this.flushing.then(() => this.write());
    return this.queued;
  }

  /** Write what is pending, in batches bounded like queue()'s (events, text). Never rejects. */
  private async write() {
    this.queued = null;
    const all = this.pending;
    this.pending = [];
    this.pendingChars = 0;
    const max = this.opts.maxBatch ?? 500;
    for (let i = 0; i < all.length; ) {
      let j = i;
      let chars = 0;
      while (j < all.length && j - i < max && chars < MAX_BATCH_CHARS) chars += textOf(all[j++].payload);
      const batch = all.slice(i, j);
      i = j;
      try {
        await this.store.appendBatch(batch);
      } catch {
        // A session deleted mid-run loses its events by design (FK); others are retried one by one.
        for (const ev of batch) await this.store.append(ev).catch((e) => this.onDropped(ev, e));
      }
    }
  }

  /**
   * Hand `onPage` the events with seq > since, in order, a page at a time (a long session is never
   * loaded whole); 'hole' (and no further page) as soon as some of them are not stored: purged, lost
   * in a crash between their send and their write, or never written. Every page is checked whole,
   * and the end against the last seq the session may have sent.
   */
  async replay(sessionId: string, since: number, onPage: (events: SessionEvent[]) => void | Promise<void>, pageSize = 1000): Promise<'ok' | 'hole'> {
    // What this process has given out by now is stored once the flush below is done; of it, only
    // what is reserved may be sent (the rest goes out live once it is).
    const c = this.seqs.get(sessionId);
    const given = c?.seq;
    const sendable = c?.reserved ?? Number.POSITIVE_INFINITY;
    await this.flush();
    let cursor = since;
    for (;;) {
      let events = await this.store.page(sessionId, cursor, pageSize);
      if (cursor === since && events.length === 0 && (await this.store.maxSeq(sessionId)) > since) {
        // Events after `since` were stored between the two reads (a flush after the one above, of
        // events emitted once the subscription held live ones): read again, now they are there.
        events = await this.store.page(sessionId, cursor, pageSize);
        if (!events.length) return 'hole';
      }
      if (events.some((e, i) => e.payload.seq !== cursor + 1 + i)) return 'hole';
      if (events.length && events[events.length - 1].payload.seq > sendable) {
        await onPage(events.filter((e) => e.payload.seq <= sendable));
        return 'ok';
      }
      if (events.length) {
        await onPage(events);
        cursor = events[events.length - 1].payload.seq;
      }
      if (events.length < pageSize) break;
    }
    // Past the stored ones: this process's run gave out more (their write failed), or a run that
    // has ended recorded a higher last seq than was stored. A run of another node is not known
    // here: its events still on their way to the log are the subscription's to wait for.
    const sent = given ?? (await this.store.restingLastSeq(sessionId));
    return cursor < sent ? 'hole' : 'ok';
  }

  /**
   * An event that could not be written: expected when its session was deleted (FK), else logged,
   * once a minute (a full disk fails every write). Replay finds the hole and answers a resync.
   */
  private onDropped(ev: SessionEvent, e: unknown) {
    if ((e as { code?: string }).code === '23503') return;
    this.dropped.error({ ...errField(e), session_id: ev.payload.session_id, seq: ev.payload.seq });
    for (const fn of this.lostListeners) fn(ev.payload.session_id, e);
  }

  /**
   * Be told of events that could not be stored (not those of a deleted session): the run that
   * sent them fails rather than going on with a log that has lost them. Answers the unsubscribe.
   */
  onLost(fn: (sessionId: string, error: unknown) => void): () => void {
    this.lostListeners.add(fn);
    return () => this.lostListeners.delete(fn);
  }

  async purge() {
    await this.store.purgeOlderThan(this.opts.ttlHours);
  }

  async close() {
    clearInterval(this.purgeTimer);
    await this.flush();
  }
}
