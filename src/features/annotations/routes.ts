import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import { me } from '../../platform/server/auth.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import { Annotation, AnnotationDeleted, AnnotationList, AnnotationParams, CreateAnnotation, MAX_PER_PAYLOAD, PatchAnnotation, PayloadParams } from './schemas.js';
import type { AnnotationStore } from './store.js';

/** Annotations on payloads (docs/solutions-and-admin.md); exported and imported with their session (src/features/portability). */
export const annotationRoutes: FastifyPluginAsyncZod<{ annotations: AnnotationStore; turns: Pick<TurnStore, 'sessionOfPayload'> }> = async (app, { annotations, turns }) => {
  const tags = ['annotations'];
  const base = '/api/payloads/:payload_id/annotations';

  const mustOwn = async (userId: string, payloadId: string) => {
    const sid = await turns.sessionOfPayload(userId, payloadId);
    if (!sid) throw Errors.notFound('payload');
    return sid;
  };

  app.get(base, { schema: { tags, params: PayloadParams, response: { 200: AnnotationList } } }, async (req) => {
    const userId = me(req).id;
    await mustOwn(userId, req.params.payload_id);
    return { items: await annotations.list(userId, req.params.payload_id) };
  });

  app.post(base, { schema: { tags, params: PayloadParams, body: CreateAnnotation, response: { 200: Annotation } } }, async (req) => {
    const userId = me(req).id;
    const sid = await mustOwn(userId, req.params.payload_id);
    // Concurrent posts cannot pass the bound: the store counts and inserts in one statement.
    const added = await annotations.add(userId, sid, req.params.payload_id, req.body, MAX_PER_PAYLOAD);
    if (!added) throw new AppError(409, 'TOO_MANY_ANNOTATIONS', `a payload holds at most ${MAX_PER_PAYLOAD} annotations`);
    return added;
  });

  app.patch(`${base}/:annotation_id`, { schema: { tags, params: AnnotationParams, body: PatchAnnotation, response: { 200: Annotation } } }, async (req) => {
    const updated = await annotations.update(me(req).id, req.params.payload_id, req.params.annotation_id, req.body);
    if (!updated) throw Errors.notFound('annotation');
    return updated;
  });

  app.delete(`${base}/:annotation_id`, { schema: { tags, params: AnnotationParams, response: { 200: AnnotationDeleted } } }, async (req) => {
    if (!(await annotations.remove(me(req).id, req.params.payload_id, req.params.annotation_id))) throw Errors.notFound('annotation');
    return { id: req.params.annotation_id, deleted: true };
  });
};
