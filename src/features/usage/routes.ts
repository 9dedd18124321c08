import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import type { Budgets } from './budgets.js';
import { dayStart } from './periods.js';
import { BudgetBody, BudgetList, BudgetsQuery, SessionParams, UsageQuery, UsageReport, UserParams } from './schemas.js';
import { roundCost, type UsageStore, type UsageRow } from './store.js';

export interface UsageRouteDeps {
  store: UsageStore;
  budgets: Budgets;
  timeZone: string;
  isAdmin: (userId: string) => Promise<boolean>;
  userExists: (userId: string) => Promise<boolean>;
  /** Throws the 404 of a session the caller does not own. */
  ownSession: (userId: string, sessionId: string) => Promise<unknown>;
}

/** A bound of the report: a day means its local midnight (`to` a day: through its end). */
function instant(v: string | undefined, tz: string, end: boolean): Date | undefined {
  if (!v) return undefined;
  return /^\d{4}-\d{2}-\d{2}$/.test(v) ? new Date(dayStart(v, tz, end ? 1 : 0)) : new Date(v);
}

function sum(items: UsageRow[]) {
  const priced = items.filter((i) => i.cost !== null);
  return {
    calls: items.reduce((n, i) => n + i.calls, 0),
    input_tokens: items.reduce((n, i) => n + i.input_tokens, 0),
    output_tokens: items.reduce((n, i) => n + i.output_tokens, 0),
    cost: priced.length ? roundCost(priced.reduce((n, i) => n + (i.cost ?? 0), 0)) : null,
  };
}

/** docs/models-and-usage.md: GET /api/usage, GET /api/budgets, a user's budgets (admins), a session's (its owner). */
export const usageRoutes: FastifyPluginAsyncZod<UsageRouteDeps> = async (app, d) => {
  const tags = ['usage'];

  app.get('/api/usage', { schema: { tags, querystring: UsageQuery, response: { 200: UsageReport } } }, async (req) => {
    const q = req.query;
    const caller = me(req).id;
    const admin = (q.user_id && q.user_id !== caller) || q.group_by === 'user' ? await d.isAdmin(caller) : false;
    if (q.user_id && q.user_id !== caller && !admin) throw Errors.forbidden('user_id: admins only');
    if (q.group_by === 'user' && !admin) throw Errors.forbidden('group_by=user: admins only');
    const from = instant(q.from, d.timeZone, false);
    const to = instant(q.to, d.timeZone, true);
    if (from && to && from >= to) throw Errors.invalid(['query', 'to'], 'must be after from');
    // An admin's group_by=user without user_id spans every user.
    const userId = q.user_id ?? (q.group_by === 'user' ? null : caller);
    const items = await d.store.report({ userId, sessionId: q.session_id, from, to, groupBy: q.group_by, timeZone: d.timeZone });
    return { items, total: sum(items) };
  });

  app.get('/api/budgets', { schema: { tags, querystring: BudgetsQuery, response: { 200: BudgetList } } }, async (req) => {
    if (req.query.session_id) await d.ownSession(me(req).id, req.query.session_id);
    return { budgets: await d.budgets.list(me(req).id, req.query.session_id) };
  });

  app.put('/api/admin/users/:user_id/budgets', { schema: { tags, params: UserParams, body: BudgetBody, response: { 200: BudgetList } } }, async (req) => {
    if (!(await d.isAdmin(me(req).id))) throw Errors.forbidden('admins only');
    const { user_id } = req.params;
    if (!(await d.userExists(user_id))) throw Errors.notFound('user');
    await d.budgets.set('user', user_id, user_id, req.body.budgets);
    return { budgets: (await d.budgets.list(user_id)).filter((b) => b.scope === 'user') };
  });

  app.put('/api/sessions/:session_id/budget', { schema: { tags, params: SessionParams, body: BudgetBody, response: { 200: BudgetList } } }, async (req) => {
    const caller = me(req).id;
    const { session_id } = req.params;
    await d.ownSession(caller, session_id);
    await d.budgets.set('session', session_id, caller, req.body.budgets);
    return { budgets: (await d.budgets.list(caller, session_id)).filter((b) => b.scope === 'session') };
  });
};
