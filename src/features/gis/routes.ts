import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { SessionParams } from '../../core/sessions/schemas.js';

export interface GisDeps {
  sessions: { getExtra(userId: string, id: string): Promise<{ extra: Record<string, unknown> }> };
}

/** GIS state (docs/solutions-and-admin.md): the session's extra info key `gis` (written with upset_extra_info), default {}. */
export const gisRoutes: FastifyPluginAsyncZod<GisDeps> = async (app, { sessions }) => {
  app.get(
    '/api/gis/:session_id/state',
    { schema: { tags: ['gis'], params: SessionParams, response: { 200: z.object({ session_id: z.string(), state: z.unknown() }) } } },
    async (req) => {
      const { extra } = await sessions.getExtra(me(req).id, req.params.session_id);
      const state = extra.gis;
      return { session_id: req.params.session_id, state: state === undefined || state === null ? {} : state };
    },
  );
};
