import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { ApiKeyPublic, KeyCreated, KeyName, KeyParams, Me } from './schemas.js';
import type { UserService } from './service.js';

/** A user's storage for /api/auth/me (the file layer's count, src/core/files/quota.ts). */
export type StorageOf = (userId: string) => Promise<{ used_bytes: number; quota_bytes: number }>;

export const userRoutes: FastifyPluginAsyncZod<{ users: UserService; storage: StorageOf }> = async (app, { users, storage }) => {
  const tags = ['keys'];

  app.get('/api/auth/me', { schema: { tags: ['auth'], response: { 200: Me } } }, async (req) => {
    const u = me(req);
    return {
      id: u.id,
      username: u.username,
      avatar_url: u.avatarUrl,
      created_at: u.createdAt.toISOString(),
      is_admin: u.isAdmin,
      // docs/identity.md: the role, and the token a cookie sign-in sends back as X-CSRF-Token.
      role: u.isAdmin ? ('admin' as const) : u.role === 'viewer' ? ('viewer' as const) : ('member' as const),
      csrf_token: req.identity?.csrf ?? null,
      storage: await storage(u.id),
    };
  });

  app.get('/api/user/api-keys/', { schema: { tags, response: { 200: z.array(ApiKeyPublic) } } }, async (req) => users.listKeys(me(req).id));

  app.post('/api/user/api-keys/', { schema: { tags, body: KeyName, response: { 201: KeyCreated } } }, async (req, reply) => {
    const created = await users.createKey(me(req).id, req.body.name);
    return reply.code(201).send(created);
  });

  app.get('/api/user/api-keys/:key_id', { schema: { tags, params: KeyParams, response: { 200: ApiKeyPublic } } }, async (req) =>
    users.getKey(me(req).id, req.params.key_id),
  );

  app.patch('/api/user/api-keys/:key_id', { schema: { tags, params: KeyParams, body: KeyName, response: { 200: ApiKeyPublic } } }, async (req) =>
    users.renameKey(me(req).id, req.params.key_id, req.body.name),
  );

  app.delete('/api/user/api-keys/:key_id', { schema: { tags, params: KeyParams, response: { 204: z.null() } } }, async (req, reply) => {
    await users.deleteKey(me(req).id, req.params.key_id);
    return reply.code(204).send(null);
  });
};
