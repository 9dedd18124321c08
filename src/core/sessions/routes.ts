import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../../platform/config/index.js';
import { me } from '../../platform/server/auth.js';
import {
  Created,
  CreateSessionBody,
  Deleted,
  EnvBody,
  ExtraBody,
  ExtraByClientTask,
  ExtraInfo,
  ListQuery,
  MemoryBody,
  MemoryState,
  PatchSessionBody,
  PinBody,
  SessionDetail,
  SessionList,
  SessionParams,
  Shared,
  SharingBody,
  ClientTaskParams,
} from './schemas.js';
import type { SessionService } from './service.js';

export interface SessionRouteDeps {
  config: Config;
  sessions: SessionService;
}

export const sessionRoutes: FastifyPluginAsyncZod<SessionRouteDeps> = async (app, { sessions }) => {
  const tags = ['sessions'];
  const params = SessionParams;

  app.post('/api/sessions', { schema: { tags, body: CreateSessionBody, response: { 200: Created } } }, async (req) => ({
    session_id: await sessions.create(me(req).id, req.body),
  }));

  app.get('/api/sessions', { schema: { tags, querystring: ListQuery, response: { 200: SessionList } } }, async (req) => {
    const found = await sessions.list(me(req).id, req.query);
    return { ...found, limit: req.query.limit, offset: req.query.offset };
  });

  // A static segment wins over `:session_id` in fastify's router, so this is never read as a session id.
  app.get('/api/sessions/extra_info/by_task/:task_id', { schema: { tags, params: ClientTaskParams, response: { 200: ExtraByClientTask } } }, async (req) =>
    sessions.extraByClientTask(me(req).id, req.params.task_id),
  );

  app.get('/api/sessions/:session_id', { schema: { tags, params, response: { 200: SessionDetail } } }, async (req) =>
    sessions.readDetail(me(req).id, req.params.session_id),
  );

  app.patch('/api/sessions/:session_id', { schema: { tags, params, body: PatchSessionBody, response: { 200: SessionDetail } } }, async (req) =>
    sessions.update(me(req).id, req.params.session_id, req.body),
  );

  app.delete('/api/sessions/:session_id', { schema: { tags, params, response: { 200: Deleted } } }, async (req) => {
    const { folderError } = await sessions.delete(me(req).id, req.params.session_id);
    if (folderError) req.log.warn({ err: folderError, session_id: req.params.session_id }, 'session deleted, its folder was not removed');
    return { deleted: true };
  });

  app.put('/api/sessions/:session_id/env', { schema: { tags, params, body: EnvBody, response: { 200: SessionDetail } } }, async (req) =>
    sessions.setEnv(me(req).id, req.params.session_id, req.body.env),
  );

  app.patch('/api/sessions/:session_id/pin', { schema: { tags, params, body: PinBody, response: { 200: SessionDetail } } }, async (req) =>
    sessions.setPinned(me(req).id, req.params.session_id, req.body.pinned),
  );

  app.patch('/api/sessions/:session_id/sharing', { schema: { tags, params, body: SharingBody, response: { 200: Shared } } }, async (req) => ({
    shared: await sessions.setShared(me(req).id, req.params.session_id, req.body.shared),
  }));

  app.patch('/api/sessions/:session_id/memory', { schema: { tags, params, body: MemoryBody, response: { 200: MemoryState } } }, async (req) => ({
    memory_enabled: await sessions.setMemory(me(req).id, req.params.session_id, req.body.memory_enabled),
  }));

  app.post('/api/sessions/:session_id/upset_extra_info', { schema: { tags, params, body: ExtraBody, response: { 200: ExtraInfo } } }, async (req) =>
    sessions.mergeExtra(me(req).id, req.params.session_id, req.body.extra),
  );

  app.get('/api/sessions/:session_id/extra_info', { schema: { tags, params, response: { 200: ExtraInfo } } }, async (req) =>
    sessions.getExtra(me(req).id, req.params.session_id),
  );
};
