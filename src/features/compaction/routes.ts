import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TurnSchema } from '../../core/events/catalogue.js';
import { me } from '../../platform/server/auth.js';
import { SessionParams } from '../../core/sessions/schemas.js';
import type { CompactionService } from './service.js';

/** POST /api/sessions/{id}/compact: answers the finished compaction entry (docs/time-travel.md). */
export const compactionRoutes: FastifyPluginAsyncZod<{ compaction: CompactionService }> = async (app, { compaction }) => {
  app.post(
    '/api/sessions/:session_id/compact',
    { schema: { tags: ['sessions'], params: SessionParams, response: { 200: z.union([TurnSchema, z.object({ compaction_id: z.null(), reason: z.string() })]) } } },
    async (req) => {
      const r = await compaction.compact(me(req).id, req.params.session_id);
      return 'entry' in r ? r.entry : r;
    },
  );
};
