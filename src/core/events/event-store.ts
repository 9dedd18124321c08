import type { Database } from '../../platform/db/index.js';
import type { SessionEvent } from '../../platform/infra/event-bus.js';
import { storableJson } from '../../platform/lib/json.js';

/** The SQL of session_events, in one place: batched appends, ordered pages, positions, purge. */
export class EventStore {
  constructor(private readonly db: Database) {}

  /**
   * Append a batch with one statement and one parameter: the batch as one JSON array, unpacked by
   * the server (jsonb_to_recordset). Each payload is encoded once, inside the array; no query text
   * or array literal is built per event in JS (that blocked the event loop on large batches).
   */
  async appendBatch(batch: SessionEvent[]): Promise<void> {
    const rows = storableJson(batch.map((e) => ({ session_id: e.payload.session_id, seq: e.payload.seq, name: e.name, payload: e.payload })));
    await this.db.sql(
      'insert into session_events (session_id, seq, name, payload) select session_id, seq, name, payload from jsonb_to_recordset(?::jsonb) as x(session_id text, seq int, name text, payload jsonb) on conflict do nothing',
      [rows],
    );
  }

  /**
   * The append of a run's first events as a part of a larger statement (its claim: one round trip
   * for all), after what `src` gives: a query of that statement with the columns `id` (the session),
   * `last_seq` (the events take the seqs after it, in order), and `fill`, an object of what only
   * that statement knows: its keys `turn` (merged into an event's `turn`) and `mode` (replacing a
   * null `mode`). Nothing when `src` is empty.
   */
  appendFrom(src: string, events: { name: string; data: Record<string, unknown> }[]): { sql: string; params: unknown[] } {
    return {
      sql: `insert into session_events (session_id, seq, name, payload)
        select s.id, s.last_seq + x.ord::int, x.e->>'name', p.payload || jsonb_build_object('session_id', s.id, 'seq', s.last_seq + x.ord::int)
        from ${src} s cross join jsonb_array_elements(?::jsonb) with ordinality as x(e, ord)
        cross join lateral (select x.e->'data' as d) d
        cross join lateral (select case when d.d->'turn' is not null then jsonb_set(d.d, '{turn}', (d.d->'turn') || (s.fill->'turn')) else d.d end as d1) d1
        cross join lateral (select case when d1.d1->'mode' = 'null'::jsonb then jsonb_set(d1.d1, '{mode}', s.fill->'mode') else d1.d1 end as payload) p
        on conflict do nothing`,
      params: [storableJson(events)],
    };
  }

  async append(ev: SessionEvent): Promise<void> {
    await this.db.sql('insert into session_events (session_id, seq, name, payload) values (?, ?, ?, ?::jsonb) on conflict do nothing', [
      ev.payload.session_id,
      ev.payload.seq,
      ev.name,
      storableJson(ev.payload),
    ]);
  }

  /** Up to `limit` events with seq > after, in order. */
  async page(sessionId: string, after: number, limit: number): Promise<SessionEvent[]> {
    const rows = await this.db.sql<{ name: string; payload: SessionEvent['payload'] }>(
      'select name, payload from session_events where session_id = ? and seq > ? order by seq limit ?',
      [sessionId, after, limit],
    );
    return rows.map((r) => ({ name: r.name, payload: r.payload }));
  }

  /** Up to `limit` events with seq > after, in order, with their seq and time (a replay's source). */
  async recordedPage(sessionId: string, after: number, limit: number): Promise<{ seq: number; name: string; payload: Record<string, unknown>; created_at: Date }[]> {
    return this.db.sql('select seq, name, payload, created_at from session_events where session_id = ? and seq > ? order by seq limit ?', [sessionId, after, limit]);
  }

  /** How many events of this name the session has stored. */
  async count(sessionId: string, name: string): Promise<number> {
    const [r] = await this.db.sql<{ n: number }>('select count(*)::int as n from session_events where session_id = ? and name = ?', [sessionId, name]);
    return r.n;
  }

  async maxSeq(sessionId: string): Promise<number> {
    const [r] = await this.db.sql<{ m: number }>('select coalesce(max(seq), 0)::int as m from session_events where session_id = ?', [sessionId]);
    return r.m;
  }

  /**
   * The last seq a session at rest has sent (sessions.last_seq, recorded by its run's end); 0 while
   * a run holds it (then it is that run's reservation, not a position).
   */
  async restingLastSeq(sessionId: string): Promise<number> {
    const [r] = await this.db.sql<{ m: number }>(`select case when status = 'running' then 0 else last_seq end as m from sessions where id = ?`, [sessionId]);
    return r?.m ?? 0;
  }

  /** The stored patches of one turn, in order (to rebuild a turn whose run died while it streamed). */
  async turnPatches(sessionId: string, turnId: string): Promise<{ patch_type: string; data: unknown }[]> {
    const rows = await this.db.sql<{ payload: { patch_type: string; data: unknown } }>(
      `select payload from session_events where session_id = ? and name = 'turn:patch' and payload->>'turn_id' = ? order by seq`,
      [sessionId, turnId],
    );
    return rows.map((r) => r.payload);
  }

  async purgeOlderThan(hours: number) {
    await this.db.sql(`delete from session_events where created_at < now() - (? || ' hours')::interval`, [String(hours)]);
  }
}
