import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ProdUserList, TokenStatus, TokenStatusBody } from '../../admin/schemas.js';
import { me } from '../../../platform/server/auth.js';
import { Errors } from '../../../platform/server/errors.js';
import type { ProdUsers } from './service.js';

/** docs/solutions-and-admin.md "Admin and production users": /api/prod_users, admins only (checked before the body). */
export const prodUserRoutes: FastifyPluginAsyncZod<{ prodUsers: ProdUsers; isAdmin: (userId: string) => Promise<boolean> }> = async (app, { prodUsers, isAdmin }) => {
  const tags = ['production users'];
  app.addHook('onRequest', async (req) => {
    if (!(await isAdmin(me(req).id))) throw Errors.forbidden('admins only');
  });

  app.get('/api/prod_users', { schema: { tags, response: { 200: ProdUserList } } }, async () => ({ items: await prodUsers.list() }));

  app.post('/api/prod_users/token-status', { schema: { tags, body: TokenStatusBody, response: { 200: TokenStatus } } }, async (req) => ({
    items: await prodUsers.tokenStatus(req.body.users),
  }));
};
