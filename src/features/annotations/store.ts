import type { Database, Sql } from '../../platform/db/index.js';
import { randomToken } from '../../platform/lib/ids.js';
import type { AnnotationT } from './schemas.js';

interface Row {
  id: string;
  payload_id: string;
  label: string;
  note: string;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const toRecord = (r: Row): AnnotationT => ({
  id: r.id,
  payload_id: r.payload_id,
  label: r.label,
  note: r.note,
  data: r.data ?? {},
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

/** The `payload_annotations` table: a user's notes on the payloads of their sessions (docs/solutions-and-admin.md). */
export class AnnotationStore {
  constructor(private readonly db: Database) {}

  /** Annotations on a session's payloads, as an archive holds them. */
  archived(userId: string, sessionId: string): Promise<Record<string, unknown>[]> {
    return this.db.sql('select payload_id, label, note, data, created_at, updated_at from payload_annotations where user_id = ? and session_id = ? order by created_at, id', [userId, sessionId]);
  }

  /** An imported annotation, in the caller's transaction `q`. */
  async insertArchived(q: Sql, a: { id: string; user_id: string; session_id: string; payload_id: string; label: string; note: string; data: object }): Promise<void> {
    await q('insert into payload_annotations (id, user_id, session_id, payload_id, label, note, data) values (?, ?, ?, ?, ?, ?, ?::jsonb)', [
      a.id,
      a.user_id,
      a.session_id,
      a.payload_id,
      a.label,
      a.note,
      JSON.stringify(a.data),
    ]);
  }

  async list(userId: string, payloadId: string): Promise<AnnotationT[]> {
    const rows = await this.db.sql<Row>('select * from payload_annotations where user_id = ? and payload_id = ? order by created_at, id', [userId, payloadId]);
    return rows.map(toRecord);
  }

  /** A new annotation, unless the payload holds `max` already (null): the count and the insert are one statement. */
  async add(userId: string, sessionId: string, payloadId: string, a: { label: string; note: string; data: Record<string, unknown> }, max: number): Promise<AnnotationT | null> {
    const [row] = await this.db.sql<Row>(
      `insert into payload_annotations (id, user_id, session_id, payload_id, label, note, data)
       select ?, ?, ?, ?, ?, ?, ?::jsonb where (select count(*) from payload_annotations where user_id = ? and payload_id = ?) < ? returning *`,
      [`ann_${randomToken(20)}`, userId, sessionId, payloadId, a.label, a.note, JSON.stringify(a.data), userId, payloadId, max],
    );
    return row ? toRecord(row) : null;
  }

  /** Changes the fields given; null when the user has no such annotation on that payload. */
  async update(userId: string, payloadId: string, id: string, a: { label?: string; note?: string; data?: Record<string, unknown> }): Promise<AnnotationT | null> {
    const [row] = await this.db.sql<Row>(
      `update payload_annotations set label = coalesce(?, label), note = coalesce(?, note), data = coalesce(?::jsonb, data), updated_at = now()
       where id = ? and payload_id = ? and user_id = ? returning *`,
      [a.label ?? null, a.note ?? null, a.data === undefined ? null : JSON.stringify(a.data), id, payloadId, userId],
    );
    return row ? toRecord(row) : null;
  }

  async remove(userId: string, payloadId: string, id: string): Promise<boolean> {
    const r = await this.db.sql('delete from payload_annotations where id = ? and payload_id = ? and user_id = ? returning id', [id, payloadId, userId]);
    return r.length > 0;
  }
}
