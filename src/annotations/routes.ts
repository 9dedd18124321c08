import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Database } from '../db/index.js';
import { randomToken } from '../lib/ids.js';
import { me } from '../server/auth.js';
import { AppError, Errors } from '../server/errors.js';
import { Annotation, AnnotationDeleted, AnnotationList, AnnotationParams, type AnnotationT, CreateAnnotation, MAX_PER_PAYLOAD, PatchAnnotation, PayloadParams } from './schemas.js';

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

/**
 * The session of a payload of the user: an entry (`entry_`), a turn (`turn_`) or a tool call (`tc_`)
 * id of one of their sessions. Anything else, or someone else's, is null (404).
 */
export async function payloadSession(db: Database, userId: string, payloadId: string): Promise<string | null> {
  const where = payloadId.startsWith('entry_')
    ? 't.id = ?'
    : payloadId.startsWith('turn_')
      ? 't.turn_id = ?'
      : payloadId.startsWith('tc_')
        ? `t.tool_calls @> jsonb_build_array(jsonb_build_object('id', ?::text))`
        : null;
  if (!where) return null;
  const rows = await db.sql<{ session_id: string }>(`select t.session_id from turns t join sessions s on s.id = t.session_id where s.user_id = ? and ${where} limit 1`, [userId, payloadId]);
  return rows[0]?.session_id ?? null;
}

/** Annotations on payloads (CONTRACT 13); exported and imported with their session (src/portability). */
export const annotationRoutes: FastifyPluginAsyncZod<{ db: Database }> = async (app, { db }) => {
  const sql = <T>(q: string, p: unknown[] = []) => db.sql<T>(q, p);
  const tags = ['annotations'];
  const base = '/api/payloads/:payload_id/annotations';

  const mustOwn = async (userId: string, payloadId: string) => {
    const sid = await payloadSession(db, userId, payloadId);
    if (!sid) throw Errors.notFound('payload');
    return sid;
  };

  app.get(base, { schema: { tags, params: PayloadParams, response: { 200: AnnotationList } } }, async (req) => {
    const userId = me(req).id;
    await mustOwn(userId, req.params.payload_id);
    const rows = await sql<Row>('select * from payload_annotations where user_id = ? and payload_id = ? order by created_at, id', [userId, req.params.payload_id]);
    return { items: rows.map(toRecord) };
  });

  app.post(base, { schema: { tags, params: PayloadParams, body: CreateAnnotation, response: { 200: Annotation } } }, async (req) => {
    const userId = me(req).id;
    const sid = await mustOwn(userId, req.params.payload_id);
    const { label, note, data } = req.body;
    // The count check and the insert are one statement: concurrent posts cannot pass the bound.
    const [row] = await sql<Row>(
      `insert into payload_annotations (id, user_id, session_id, payload_id, label, note, data)
       select ?, ?, ?, ?, ?, ?, ?::jsonb where (select count(*) from payload_annotations where user_id = ? and payload_id = ?) < ? returning *`,
      [`ann_${randomToken(20)}`, userId, sid, req.params.payload_id, label, note, JSON.stringify(data), userId, req.params.payload_id, MAX_PER_PAYLOAD],
    );
    if (!row) throw new AppError(409, 'TOO_MANY_ANNOTATIONS', `a payload holds at most ${MAX_PER_PAYLOAD} annotations`);
    return toRecord(row);
  });

  app.patch(`${base}/:annotation_id`, { schema: { tags, params: AnnotationParams, body: PatchAnnotation, response: { 200: Annotation } } }, async (req) => {
    const { label, note, data } = req.body;
    const [row] = await sql<Row>(
      `update payload_annotations set label = coalesce(?, label), note = coalesce(?, note), data = coalesce(?::jsonb, data), updated_at = now()
       where id = ? and payload_id = ? and user_id = ? returning *`,
      [label ?? null, note ?? null, data === undefined ? null : JSON.stringify(data), req.params.annotation_id, req.params.payload_id, me(req).id],
    );
    if (!row) throw Errors.notFound('annotation');
    return toRecord(row);
  });

  app.delete(`${base}/:annotation_id`, { schema: { tags, params: AnnotationParams, response: { 200: AnnotationDeleted } } }, async (req) => {
    const r = await sql('delete from payload_annotations where id = ? and payload_id = ? and user_id = ? returning id', [req.params.annotation_id, req.params.payload_id, me(req).id]);
    if (!r.length) throw Errors.notFound('annotation');
    return { id: req.params.annotation_id, deleted: true };
  });
};
