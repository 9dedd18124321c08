import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import { AdminBody, AdminList, Grant, GrantBody, GrantParams, Ok, UserParams } from './schemas.js';
import type { Admin } from './service.js';

/**
 * docs/solutions-and-admin.md "Admin and production users" (the /api/admin half; src/features/production/users serves the rest). The admin check runs before the body is validated, so a
 * non-admin gets 403 whatever it sends; it reads the database, so a grant takes effect at once.
 */
export const adminRoutes: FastifyPluginAsyncZod<{ admin: Admin }> = async (app, { admin }) => {
  const tags = ['admin'];
  app.addHook('onRequest', async (req) => {
    if (!(await admin.isAdmin(me(req).id))) throw Errors.forbidden('admins only');
  });

  app.get('/api/admin/admins', { schema: { tags, response: { 200: AdminList } } }, async () => ({ items: await admin.admins() }));

  app.post('/api/admin/admins', { schema: { tags, body: AdminBody, response: { 200: Ok } } }, async (req) => {
    await admin.grantAdmin(req.body.user_id);
    return { ok: true };
  });

  app.delete('/api/admin/admins/:user_id', { schema: { tags, params: UserParams, response: { 200: Ok } } }, async (req) => {
    await admin.revokeAdmin(req.params.user_id);
    return { ok: true };
  });

  const grants = '/api/admin/users/:user_id/solutions/:solution_id/biz-roles';
  app.get(grants, { schema: { tags, params: GrantParams, response: { 200: Grant } } }, async (req) => admin.grants(req.params.user_id, req.params.solution_id));

  app.put(grants, { schema: { tags, params: GrantParams, body: GrantBody, response: { 200: Ok } } }, async (req) => {
    await admin.setGrants(req.params.user_id, req.params.solution_id, req.body.biz_role_ids);
    return { ok: true };
  });
};
