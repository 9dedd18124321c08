import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { SessionParams } from '../../core/sessions/schemas.js';
import type { Replays } from './service.js';

const Speed = z.union([z.literal(1), z.literal(2), z.literal(5)], { message: 'speed must be 1, 2 or 5' });
const State = z.object({
  source_session_id: z.string(),
  speed: z.number(),
  status: z.enum(['playing', 'paused', 'autonomous', 'finished']),
  position: z.number().int(),
  total: z.number().int(),
});

/** Replay endpoints (docs/time-travel.md). */
export const replayRoutes: FastifyPluginAsyncZod<{ replays: Replays }> = async (app, { replays }) => {
  const tags = ['sessions'];
  const params = SessionParams;
  app.post(
    '/api/sessions/:session_id/replay',
    { schema: { tags, params, body: z.object({ speed: Speed.default(1) }).strict(), response: { 200: z.object({ session_id: z.string() }) } } },
    async (req) => replays.start(me(req).id, req.params.session_id, req.body.speed),
  );
  app.get(
    '/api/sessions/:session_id/replay/preview',
    { schema: { tags, params, response: { 200: z.object({ session_id: z.string(), intent: z.string(), supported: z.boolean(), reason: z.string().nullable() }) } } },
    async (req) => replays.preview(me(req).id, req.params.session_id),
  );
  app.patch(
    '/api/sessions/:session_id/replay',
    {
      schema: {
        tags,
        params,
        body: z.object({ speed: Speed.optional(), status: z.enum(['autonomous']).nullable().optional() }).strict(),
        response: { 200: z.object({ replay_state: State }) },
      },
    },
    async (req) => replays.steer(me(req).id, req.params.session_id, req.body),
  );
};
