import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { Calendar, CalendarQuery, CreateScheduledTaskBody, PatchScheduledTaskBody, RunRecord, ScheduledTask, ScheduledTaskIdParams } from './schemas.js';
import type { SchedulingService } from './service.js';

/** docs/scale-out.md "Scheduled tasks": another user's task is a 404. */
export const scheduledTaskRoutes: FastifyPluginAsyncZod<{ scheduling: SchedulingService }> = async (app, { scheduling }) => {
  const tags = ['scheduled-tasks'];
  const params = ScheduledTaskIdParams;

  app.post('/api/scheduled-tasks', { schema: { tags, body: CreateScheduledTaskBody, response: { 201: ScheduledTask } } }, async (req, reply) => {
    reply.code(201);
    return scheduling.create(me(req).id, req.body);
  });
  app.get('/api/scheduled-tasks', { schema: { tags, response: { 200: z.array(ScheduledTask) } } }, async (req) => scheduling.list(me(req).id));
  // Before /:task_id, though find-my-way prefers the static segment anyway.
  app.get('/api/scheduled-tasks/calendar', { schema: { tags, querystring: CalendarQuery, response: { 200: Calendar } } }, async (req) =>
    scheduling.calendar(me(req).id, req.query.from, req.query.to),
  );
  app.get('/api/scheduled-tasks/:task_id', { schema: { tags, params, response: { 200: ScheduledTask } } }, async (req) => scheduling.get(me(req).id, req.params.task_id));
  app.patch('/api/scheduled-tasks/:task_id', { schema: { tags, params, body: PatchScheduledTaskBody, response: { 200: ScheduledTask } } }, async (req) =>
    scheduling.update(me(req).id, req.params.task_id, req.body),
  );
  app.delete('/api/scheduled-tasks/:task_id', { schema: { tags, params, response: { 204: z.null() } } }, async (req, reply) => {
    await scheduling.delete(me(req).id, req.params.task_id);
    reply.code(204);
    return null;
  });
  app.post('/api/scheduled-tasks/:task_id/start', { schema: { tags, params, response: { 200: ScheduledTask } } }, async (req) =>
    scheduling.setEnabled(me(req).id, req.params.task_id, true),
  );
  app.post('/api/scheduled-tasks/:task_id/stop', { schema: { tags, params, response: { 200: ScheduledTask } } }, async (req) =>
    scheduling.setEnabled(me(req).id, req.params.task_id, false),
  );
  app.get('/api/scheduled-tasks/:task_id/runs', { schema: { tags, params, response: { 200: z.array(RunRecord) } } }, async (req) =>
    scheduling.runs(me(req).id, req.params.task_id),
  );
};
