import type { Database } from '../db/index.js';
import type { SessionEvent } from '../infra/event-bus.js';
import { storableJson } from '../lib/json.js';

/** The SQL of session_events, in one place: batched appends, ordered pages, positions, purge. */
export class EventStore {
  constructor(private readonly db: Database) {}

  private conn() {
    return this.db.em().getConnection();
  }

  /**
   * Append a batch with one statement: four array parameters bound by the server (knex -> pg), not
   * a query string built in JS (formatting thousands of values client-side blocked the event loop).
   */
  async appendBatch(batch: SessionEvent[]): Promise<void> {
    const cols = [batch.map((e) => e.payload.session_id), batch.map((e) => e.payload.seq), batch.map((e) => e.name), batch.map((e) => storableJson(e.payload))];
    await this.conn()
      .getKnex()
      .raw('insert into session_events (session_id, seq, name, payload) select * from unnest(?::text[], ?::int[], ?::text[], ?::jsonb[]) on conflict do nothing', cols);
  }

  async append(ev: SessionEvent): Promise<void> {
    await this.conn().execute('insert into session_events (session_id, seq, name, payload) values (?, ?, ?, ?::jsonb) on conflict do nothing', [
      ev.payload.session_id,
      ev.payload.seq,
      ev.name,
      storableJson(ev.payload),
    ]);
  }

  /** Up to `limit` events with seq > after, in order. */
  async page(sessionId: string, after: number, limit: number): Promise<SessionEvent[]> {
    const rows = await this.conn().execute<{ name: string; payload: SessionEvent['payload'] }[]>(
      'select name, payload from session_events where session_id = ? and seq > ? order by seq limit ?',
      [sessionId, after, limit],
    );
    return rows.map((r) => ({ name: r.name, payload: r.payload }));
  }

  async maxSeq(sessionId: string): Promise<number> {
    const [r] = await this.conn().execute<{ m: number }[]>('select coalesce(max(seq), 0)::int as m from session_events where session_id = ?', [sessionId]);
    return r.m;
  }

  /** The stored patches of one turn, in order (to rebuild a turn whose run died while it streamed). */
  async turnPatches(sessionId: string, turnId: string): Promise<{ patch_type: string; data: unknown }[]> {
    const rows = await this.conn().execute<{ payload: { patch_type: string; data: unknown } }[]>(
      `select payload from session_events where session_id = ? and name = 'turn:patch' and payload->>'turn_id' = ? order by seq`,
      [sessionId, turnId],
    );
    return rows.map((r) => r.payload);
  }

  async purgeOlderThan(hours: number) {
    await this.conn().execute(`delete from session_events where created_at < now() - (? || ' hours')::interval`, [String(hours)]);
  }
}
