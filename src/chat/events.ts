import type { EventBus, SessionEvent } from '../infra/event-bus.js';
import { errField, type Logger } from '../lib/logger.js';
import type { EventStore } from './event-store.js';

export type { SessionEvent } from '../infra/event-bus.js';

const MAX_SEEN = 100_000;

/**
 * Session events: every event gets the session's next `seq`, is published at once to live
 * subscribers, and is written to session_events in batches (one multi-row insert per flush), so a
 * streaming run costs one INSERT per ~20 ms rather than one per text delta. Replay first flushes,
 * so nothing published is missing from the log it reads.
 */
export class EventLog {
  private seqs = new Map<string, number>();
  private pending: SessionEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private purgeTimer: NodeJS.Timeout;
  /**
   * The highest seq seen on the bus for sessions whose run is under way (on any node), until their
   * chat:end. Published events reach the log a few ms later; when an owner dies in between, the
   * node that closes its run continues after what clients saw, not after what was stored.
   */
  private seen = new Map<string, number>();
  private offBus: () => void;

  constructor(
    private readonly store: EventStore,
    readonly bus: EventBus,
    private readonly opts: { ttlHours: number; flushMs?: number; maxBatch?: number; logger?: Logger },
  ) {
    this.purgeTimer = setInterval(() => void this.purge().catch(() => {}), 3600_000);
    this.purgeTimer.unref();
    this.offBus = bus.subscribe((ev) => {
      const sid = ev.payload.session_id;
      this.seen.delete(sid);
      if (ev.name === 'chat:end') return;
      this.seen.set(sid, ev.payload.seq);
      if (this.seen.size > MAX_SEEN) this.seen.delete(this.seen.keys().next().value as string);
    });
  }

  /**
   * Load the session's last seq; required before emitting for a session this process did not start.
   * `stored`: the highest stored seq when the caller has just read it (the run claim does), else read here.
   */
  async open(sessionId: string, stored?: number): Promise<number> {
    const known = this.seqs.get(sessionId);
    if (known !== undefined) return known;
    const last = stored ?? (await this.store.maxSeq(sessionId));
    const seq = Math.max(last, this.seqs.get(sessionId) ?? 0, this.seen.get(sessionId) ?? 0);
    this.seqs.set(sessionId, seq);
    return seq;
  }

  /** Forget the in-memory counter (the run ended; another node may own the next one). */
  release(sessionId: string) {
    this.seqs.delete(sessionId);
  }

  current(sessionId: string): number | undefined {
    return this.seqs.get(sessionId);
  }

  /** The session's last seq: the live counter when this process runs it, else the stored maximum. */
  async latest(sessionId: string): Promise<number> {
    const live = this.seqs.get(sessionId);
    if (live !== undefined) return live;
    await this.flush();
    return Math.max(await this.store.maxSeq(sessionId), this.seqs.get(sessionId) ?? 0);
  }

  /** `publish: false` stores the event without sending it: the caller publishes it later (`publish`). */
  emit(sessionId: string, name: string, data: Record<string, unknown> = {}, opts: { publish?: boolean } = {}): SessionEvent {
    const last = this.seqs.get(sessionId);
    if (last === undefined) throw new Error(`event log not opened for ${sessionId}`);
    const seq = last + 1;
    this.seqs.set(sessionId, seq);
    const ev: SessionEvent = { name, payload: { session_id: sessionId, seq, ...data } };
    this.pending.push(ev);
    if (this.pending.length >= (this.opts.maxBatch ?? 500)) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.opts.flushMs ?? 20);
    if (opts.publish !== false) this.bus.publish(ev);
    return ev;
  }

  publish(ev: SessionEvent) {
    this.bus.publish(ev);
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.flushing.then(async () => {
      if (!batch.length) return;
      try {
        await this.store.appendBatch(batch);
      } catch {
        // A session deleted mid-run loses its events by design (FK); others are retried one by one.
        for (const ev of batch) await this.store.append(ev).catch((e) => this.onDropped(ev, e));
      }
    });
    return this.flushing;
  }

  /**
   * Hand `onPage` the events with seq > since, in order, a page at a time (a long session is never
   * loaded whole); 'too_old' (and no page) when some of them have been purged.
   */
  async replay(sessionId: string, since: number, onPage: (events: SessionEvent[]) => void, pageSize = 1000): Promise<'ok' | 'too_old'> {
    await this.flush();
    let cursor = since;
    for (;;) {
      let events = await this.store.page(sessionId, cursor, pageSize);
      if (cursor === since && events.length === 0 && (await this.store.maxSeq(sessionId)) > since) {
        // Events after `since` were stored between the two reads (a flush after the one above, of
        // events emitted once the subscription held live ones): read again, now they are there.
        events = await this.store.page(sessionId, cursor, pageSize);
        if (!events.length) return 'too_old';
      }
      // Only stored events say some were purged: a first one past since + 1.
      if (cursor === since && events.length && events[0].payload.seq !== since + 1) return 'too_old';
      if (!events.length) return 'ok';
      onPage(events);
      cursor = events[events.length - 1].payload.seq;
      if (events.length < pageSize) return 'ok';
    }
  }

  /** An event that could not be written: expected when its session was deleted (FK), else logged. */
  private onDropped(ev: SessionEvent, e: unknown) {
    if ((e as { code?: string }).code === '23503') return;
    this.opts.logger?.error({ ...errField(e), session_id: ev.payload.session_id, seq: ev.payload.seq }, 'an event could not be stored');
  }

  async purge() {
    await this.store.purgeOlderThan(this.opts.ttlHours);
  }

  async close() {
    clearInterval(this.purgeTimer);
    this.offBus();
    await this.flush();
  }
}
