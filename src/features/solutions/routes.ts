import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { contentTypeOf } from '../../core/files/content-type.js';
import { text } from '../../platform/lib/storable.js';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import type { Solution, SolutionCatalog } from './catalog.js';
import type { RoleAccess } from './roles.js';

const RoleOut = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  system_prompt: z.string(),
  tools: z.array(z.string()).nullable(),
  initial_mode: z.string().nullable(),
  skills: z.array(z.string()),
});
const SolutionOut = z.object({
  id: z.string(),
  name: z.string(),
  version: z.string(),
  description: z.string(),
  layout_type: z.string(),
  initial_message: z.string(),
  data: z.record(z.string(), z.unknown()),
  roles: z.array(RoleOut),
});
const Params = z.object({ solution_id: text(128, 1) });
const FileParams = Params.extend({ '*': z.string().max(4096).default('') });

const out = ({ dir: _d, source: _s, ...s }: Solution) => s;

export interface SolutionRouteDeps {
  catalog: SolutionCatalog;
  access: () => RoleAccess;
  isAdmin: (userId: string) => Promise<boolean>;
  userExists: (userId: string) => Promise<boolean>;
}

/** docs/solutions-and-admin.md "Solutions": the catalogue, a user's roles, a package's files. */
export const solutionRoutes: FastifyPluginAsyncZod<SolutionRouteDeps> = async (app, deps) => {
  const tags = ['solutions'];
  const found = (id: string) => {
    const s = deps.catalog.get(id);
    if (!s) throw Errors.notFound('solution');
    return s;
  };

  app.get('/api/solutions', { schema: { tags, response: { 200: z.object({ items: z.array(SolutionOut) }) } } }, async () => ({ items: deps.catalog.list().map(out) }));

  app.get(
    '/api/solutions/:solution_id/biz-roles',
    {
      schema: {
        tags,
        params: Params,
        querystring: z.object({ user_id: text(128, 1).optional() }),
        response: { 200: z.object({ solution_id: z.string(), user_id: z.string(), items: z.array(RoleOut) }) },
      },
    },
    async (req) => {
      const caller = me(req).id;
      const userId = req.query.user_id ?? caller;
      if (userId !== caller) {
        if (!(await deps.isAdmin(caller))) throw Errors.forbidden("only an admin may read another user's roles");
        if (!(await deps.userExists(userId))) throw Errors.notFound('user');
      }
      const s = found(req.params.solution_id);
      const items = [];
      for (const r of s.roles) if (await deps.access().allowed(userId, s.id, r.id)) items.push(r);
      return { solution_id: s.id, user_id: userId, items };
    },
  );

  app.get('/api/solutions/:solution_id/files/*', { schema: { tags, params: FileParams } }, async (req, reply) => {
    const s = found(req.params.solution_id);
    const path = req.params['*'];
    if (path.startsWith('/') || path.split('/').includes('..') || path.includes('\0')) throw Errors.invalid(['path', 'file_path'], 'paths stay inside the solution package');
    const f = deps.catalog.file(s.id, path);
    if (!f) throw Errors.notFound('file');
    return reply.type(contentTypeOf(f.path)).send(f.content);
  });
};
