import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import type { SessionService } from '../sessions/service.js';
import type { BackgroundTasks } from './background.js';

import { SessionParams as Params } from '../sessions/schemas.js';

const BackgroundTaskParams = Params.extend({ task_id: z.string().min(1).max(100) });
const Task = z.object({
  id: z.string(),
  session_id: z.string(),
  command: z.string(),
  description: z.string().nullable(),
  status: z.enum(['running', 'completed', 'failed', 'killed']),
  exit_code: z.number().int().nullable(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
});

export const backgroundRoutes: FastifyPluginAsyncZod<{ sessions: SessionService; background: BackgroundTasks }> = async (app, { sessions, background }) => {
  const tags = ['background tasks'];
  app.get('/api/sessions/:session_id/background-tasks', { schema: { tags, params: Params, response: { 200: z.array(Task) } } }, async (req) => {
    await sessions.getOwned(me(req).id, req.params.session_id);
    return background.list(req.params.session_id);
  });
  app.get(
    '/api/sessions/:session_id/background-tasks/:task_id',
    { schema: { tags, params: BackgroundTaskParams, querystring: z.object({ tail: z.coerce.number().int().min(1).max(10000).default(100) }), response: { 200: Task.extend({ output: z.string(), total_lines: z.number().int(), output_bytes: z.number().int(), dropped_bytes: z.number().int() }) } } },
    async (req) => {
      await sessions.getOwned(me(req).id, req.params.session_id);
      const t = background.get(req.params.session_id, req.params.task_id, req.query.tail);
      if (!t) throw Errors.notFound('background task');
      return t;
    },
  );
  app.post('/api/sessions/:session_id/background-tasks/:task_id/stop', { schema: { tags, params: BackgroundTaskParams, response: { 200: Task } } }, async (req) => {
    await sessions.getOwned(me(req).id, req.params.session_id);
    const t = await background.stop(req.params.session_id, req.params.task_id);
    if (!t) throw Errors.notFound('background task');
    return t;
  });
};
