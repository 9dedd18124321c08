import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';
import { me } from '../../platform/server/auth.js';
import type { ModelKeys } from './service.js';

const Params = z.object({ model_id: text(200, 1) }).strict();
/** The key itself: checked further by the service (visible ASCII, no spaces). */
const Body = z.object({ api_key: z.string().min(1).max(4096) }).strict();
const Credential = z.object({
  model_id: z.string(),
  personal_key: z.enum(['allowed', 'required']),
  set: z.boolean(),
  masked: z.string().nullable(),
  key_id: z.string().nullable(),
  readable: z.boolean().nullable(),
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
});

/**
 * The caller's own model keys (docs/model-keys.md): every model entry that takes one, with the
 * caller's key masked. No answer ever carries the key: the response schemas have no field for it.
 */
export const modelKeyRoutes: FastifyPluginAsyncZod<{ keys: ModelKeys }> = async (app, { keys }) => {
  const tags = ['model keys'];

  app.get('/api/me/credentials', { schema: { tags, summary: 'Your API keys for the models that take one (masked)', response: { 200: z.object({ items: z.array(Credential) }) } } }, async (req) => ({
    items: await keys.list(me(req).id),
  }));

  app.get('/api/me/credentials/:model_id', { schema: { tags, summary: 'Your API key for one model (masked)', params: Params, response: { 200: Credential } } }, async (req) =>
    keys.get(me(req).id, req.params.model_id),
  );

  app.put(
    '/api/me/credentials/:model_id',
    { schema: { tags, summary: 'Store (or replace) your API key for a model; it is encrypted and never shown again', params: Params, body: Body, response: { 200: Credential } } },
    async (req) => keys.set(me(req).id, req.params.model_id, req.body.api_key, me(req).id),
  );

  app.delete('/api/me/credentials/:model_id', { schema: { tags, summary: 'Delete your API key for a model', params: Params, response: { 204: z.null() } } }, async (req, reply) => {
    await keys.remove(me(req).id, req.params.model_id, me(req).id);
    return reply.code(204).send(null);
  });
};
