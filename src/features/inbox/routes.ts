import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { me } from '../../platform/server/auth.js';
import { AnswerBody, Answered, AnswerParams, InboxList, InboxQuery } from './schemas.js';
import type { Inbox } from './service.js';

/** The inbox (docs/inbox.md): only the caller's own sessions; another user's session answers 404. */
export const inboxRoutes: FastifyPluginAsyncZod<{ inbox: Inbox }> = async (app, { inbox }) => {
  const tags = ['inbox'];
  app.get('/api/inbox', { schema: { tags, querystring: InboxQuery, response: { 200: InboxList } } }, async (req) => inbox.list(me(req).id, req.query.limit, req.query.offset));
  app.post('/api/inbox/:tool_call_id/answer', { schema: { tags, params: AnswerParams, body: AnswerBody, response: { 202: Answered } } }, async (req, reply) => {
    reply.code(202);
    return inbox.answer(me(req).id, req.body.session_id, { tool_call_id: req.params.tool_call_id, selections: req.body.selections, custom: req.body.custom });
  });
};
