import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import type { MemoryStore } from './store.js';

const opt255 = text(255).nullable().optional();
const Fields = {
  content: text(500, 1),
  type: z.enum(['feedback', 'experience']),
  skill_name: opt255,
  record_type: z.enum(['memory', 'skill_comment']).nullable().optional(),
  scope: opt255,
  owner: opt255,
  topic: opt255,
  ext_memory_id: opt255,
  write_reason: text(500, 1).nullable().optional(),
};
const Create = z.object({ ...Fields, type: Fields.type.default('feedback') }).strict();
const Put = z.object({ ...Fields, superseded_by: z.number().int().min(1).nullable().optional() }).partial().strict();
const Memory = z.object({
  id: z.number().int(),
  type: z.string(),
  content: z.string(),
  skill_name: z.string().nullable(),
  record_type: z.string().nullable(),
  scope: z.string().nullable(),
  owner: z.string().nullable(),
  topic: z.string().nullable(),
  ext_memory_id: z.string().nullable(),
  superseded_by: z.number().nullable(),
  write_reason: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string().nullable(),
  hit_count: z.number().int(),
  last_hit_at: z.string().nullable(),
  disabled: z.boolean(),
  source_session: z.string(),
});
const Params = z.object({ memory_id: z.coerce.number().int().min(1).max(2147483647) });
const Query = z.object({
  keyword: text(500).optional(),
  skill_name: text(255).optional(),
  type: text(50).optional(),
  record_type: text(50).optional(),
  scope: text(255).optional(),
  owner: text(255).optional(),
  topic: text(255).optional(),
  status: z.enum(['active', 'disabled', 'all']).default('all'),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

/** docs/memories-and-settings.md "Memories": per user; another user's memory is a 404. */
export const memoryRoutes: FastifyPluginAsyncZod<{ store: MemoryStore }> = async (app, { store }) => {
  const tags = ['memories'];
  const found = <T>(m: T | null): T => {
    if (!m) throw Errors.notFound('memory');
    return m;
  };
  app.post('/api/memories', { schema: { tags, body: Create, response: { 201: Memory } } }, async (req, reply) => {
    reply.code(201);
    return store.insert(me(req).id, req.body);
  });
  app.get('/api/memories', { schema: { tags, querystring: Query, response: { 200: z.object({ items: z.array(Memory), total: z.number().int() }) } } }, async (req) =>
    store.list(me(req).id, req.query),
  );
  app.post(
    '/api/memories/batch',
    { schema: { tags, body: z.object({ action: z.enum(['delete', 'disable', 'enable']), ids: z.array(z.number().int()).min(1).max(100) }).strict(), response: { 200: z.object({ ok: z.boolean(), count: z.number().int() }) } } },
    async (req) => ({ ok: true, count: await store.batch(me(req).id, req.body.action, req.body.ids.filter((i) => i > 0 && i <= 2147483647)) }),
  );
  app.get('/api/memories/:memory_id', { schema: { tags, params: Params, response: { 200: Memory } } }, async (req) => found(await store.get(me(req).id, req.params.memory_id)));
  app.put('/api/memories/:memory_id', { schema: { tags, params: Params, body: Put, response: { 200: Memory } } }, async (req) => {
    if (req.body.superseded_by != null && !(await store.get(me(req).id, req.body.superseded_by))) throw Errors.invalid(['body', 'superseded_by'], 'no such memory');
    return found(await store.update(me(req).id, req.params.memory_id, req.body));
  });
  app.patch('/api/memories/:memory_id', { schema: { tags, params: Params, body: z.object({ disabled: z.boolean() }).strict(), response: { 200: Memory } } }, async (req) =>
    found(await store.update(me(req).id, req.params.memory_id, { disabled: req.body.disabled })),
  );
  app.delete('/api/memories/:memory_id', { schema: { tags, params: Params, response: { 200: z.object({ ok: z.boolean() }) } } }, async (req) => {
    found((await store.delete(me(req).id, req.params.memory_id)) || null);
    return { ok: true };
  });
};
