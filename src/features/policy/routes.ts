import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import type { AuditAction } from './audit-store.js';
import { normalRules } from '../../platform/config/policy.js';
import { AuditList, AuditQuerySchema, EffectivePolicy, RulesBody, SessionParams, UserParams, UserPolicy } from './schemas.js';
import type { PolicyService } from './service.js';

export interface PolicyRouteDeps {
  policy: PolicyService;
  sessions: { getOwned(userId: string, id: string): Promise<{ id: string }> };
  isAdmin(userId: string): Promise<boolean>;
  userExists(userId: string): Promise<boolean>;
}

/**
 * Tool policy over REST (docs/policy.md): a session's own rules (its owner), a user's rules (an
 * admin), and the audit trail (the caller's records; an admin's: everyone's).
 */
export const policyRoutes: FastifyPluginAsyncZod<PolicyRouteDeps> = async (app, d) => {
  const tags = ['policy'];
  const effective = async (userId: string, sessionId: string) => {
    const set = await d.policy.effective(userId, sessionId);
    return { default: set.default, unattended: d.policy.install.unattended, rules: set.rules };
  };
  const mustBeAdmin = async (userId: string) => {
    if (!(await d.isAdmin(userId))) throw Errors.forbidden('admins only');
  };

  app.get('/api/sessions/:session_id/policy', { schema: { tags, summary: "The session's effective rules, each with its source", params: SessionParams, response: { 200: EffectivePolicy } } }, async (req) => {
    const s = await d.sessions.getOwned(me(req).id, req.params.session_id);
    return effective(me(req).id, s.id);
  });

  app.put(
    '/api/sessions/:session_id/policy',
    { schema: { tags, summary: "Replace the session's own rules (they narrow, never widen)", params: SessionParams, body: RulesBody, response: { 200: EffectivePolicy } } },
    async (req) => {
      const s = await d.sessions.getOwned(me(req).id, req.params.session_id);
      await d.policy.store.setSessionRules(s.id, normalRules(req.body.rules));
      return effective(me(req).id, s.id);
    },
  );

  const userPath = '/api/admin/users/:user_id/policy';
  app.get(userPath, { onRequest: async (req) => mustBeAdmin(me(req).id), schema: { tags, summary: "A user's rules", params: UserParams, response: { 200: UserPolicy } } }, async (req) => {
    if (!(await d.userExists(req.params.user_id))) throw Errors.notFound('user');
    return { user_id: req.params.user_id, rules: await d.policy.store.userRules(req.params.user_id) };
  });

  app.put(userPath, { onRequest: async (req) => mustBeAdmin(me(req).id), schema: { tags, summary: "Replace a user's rules", params: UserParams, body: RulesBody, response: { 200: UserPolicy } } }, async (req) => {
    if (!(await d.userExists(req.params.user_id))) throw Errors.notFound('user');
    const rules = normalRules(req.body.rules);
    await d.policy.store.setUserRules(req.params.user_id, rules);
    return { user_id: req.params.user_id, rules };
  });

  app.get('/api/audit', { schema: { tags, summary: 'Policy decisions, newest first', querystring: AuditQuerySchema, response: { 200: AuditList } } }, async (req) => {
    const q = req.query;
    const caller = me(req).id;
    const admin = await d.isAdmin(caller);
    if (q.user_id && q.user_id !== caller && !admin) throw Errors.forbidden('only admins read the audit of other users');
    if (q.from && q.to && new Date(q.from) > new Date(q.to)) throw Errors.invalid(['query', 'from'], 'from is after to');
    return d.policy.audit.list({
      userId: admin ? q.user_id : caller,
      sessionId: q.session_id,
      from: q.from ? new Date(q.from) : undefined,
      to: q.to ? new Date(q.to) : undefined,
      action: q.action as AuditAction | undefined,
      limit: q.limit,
      offset: q.offset,
    });
  });
};
