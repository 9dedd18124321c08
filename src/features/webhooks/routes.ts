import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { Attempt, AttemptList, CreateWebhookBody, DeliveriesQuery, PatchWebhookBody, Webhook, WebhookParams } from './schemas.js';
import type { Webhooks } from './service.js';

/** Webhooks (docs/webhooks.md): a user's own, and for admins the install-wide ones; another's is 404. */
export const webhookRoutes: FastifyPluginAsyncZod<{ webhooks: Webhooks }> = async (app, { webhooks }) => {
  const tags = ['webhooks'];
  const params = WebhookParams;
  app.post('/api/webhooks', { schema: { tags, body: CreateWebhookBody, response: { 201: Webhook } } }, async (req, reply) => {
    reply.code(201);
    return webhooks.create(me(req).id, req.body);
  });
  app.get('/api/webhooks', { schema: { tags, response: { 200: z.object({ items: z.array(Webhook) }) } } }, async (req) => ({ items: await webhooks.list(me(req).id) }));
  app.get('/api/webhooks/:webhook_id', { schema: { tags, params, response: { 200: Webhook } } }, async (req) => webhooks.get(me(req).id, req.params.webhook_id));
  app.patch('/api/webhooks/:webhook_id', { schema: { tags, params, body: PatchWebhookBody, response: { 200: Webhook } } }, async (req) =>
    webhooks.update(me(req).id, req.params.webhook_id, req.body),
  );
  app.delete('/api/webhooks/:webhook_id', { schema: { tags, params, response: { 204: z.null() } } }, async (req, reply) => {
    await webhooks.remove(me(req).id, req.params.webhook_id);
    reply.code(204);
    return null;
  });
  app.get('/api/webhooks/:webhook_id/deliveries', { schema: { tags, params, querystring: DeliveriesQuery, response: { 200: AttemptList } } }, async (req) =>
    webhooks.deliveries(me(req).id, req.params.webhook_id, req.query.limit, req.query.offset),
  );
  app.post('/api/webhooks/:webhook_id/test', { schema: { tags, params, response: { 200: Attempt } } }, async (req) => webhooks.test(me(req).id, req.params.webhook_id));
};
