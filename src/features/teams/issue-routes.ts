import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { me } from '../../platform/server/auth.js';
import {
  ChildProgress,
  ChildProgressQuery,
  Comment,
  CreateIssue,
  Grouped,
  GroupedQuery,
  Issue,
  IssuePage,
  IssueParams,
  IssueQuery,
  items,
  PatchIssue,
  IssueTaskRun,
  TimelineEvent,
  Usage,
  TeamWorkspaceParams,
} from './schemas.js';
import type { TeamWorkspaceService } from './service.js';

/** docs/solutions-and-admin.md "Workspaces and issues": the issue half. Every route answers 404 to a non-member. */
export const issueRoutes: FastifyPluginAsyncZod<{ service: TeamWorkspaceService }> = async (app, { service }) => {
  const { store, issues, runs } = service.d;
  const tags = ['issues'];
  const params = TeamWorkspaceParams;
  const base = '/api/prod_workspaces/:workspace_id/issues';

  app.post(base, { schema: { tags, params, body: CreateIssue, response: { 200: Issue } } }, async (req) => service.createIssue(me(req).id, req.params.workspace_id, req.body));
  app.get(base, { schema: { tags, params, response: { 200: items(Issue) } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id);
    return { items: await issues.all(req.params.workspace_id) };
  });
  app.get(`${base}/query`, { schema: { tags, params, querystring: IssueQuery, response: { 200: IssuePage } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id);
    return { ...(await issues.query(req.params.workspace_id, req.query)), limit: req.query.limit, offset: req.query.offset };
  });
  app.get(`${base}/grouped`, { schema: { tags, params, querystring: GroupedQuery, response: { 200: Grouped } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id);
    return issues.grouped(req.params.workspace_id, req.query.by, req.query.limit);
  });
  app.get(`${base}/child-progress`, { schema: { tags, params, querystring: ChildProgressQuery, response: { 200: ChildProgress } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id);
    if (req.query.parent_id) await issues.get(req.params.workspace_id, req.query.parent_id);
    return issues.childProgress(req.params.workspace_id, req.query.parent_id);
  });

  const one = `${base}/:issue_id`;
  app.get(one, { schema: { tags, params: IssueParams, response: { 200: Issue } } }, async (req) => service.issue(me(req).id, req.params.workspace_id, req.params.issue_id));
  app.put(one, { schema: { tags, params: IssueParams, body: PatchIssue, response: { 200: Issue } } }, async (req) =>
    service.updateIssue(me(req).id, req.params.workspace_id, req.params.issue_id, req.body),
  );
  app.get(`${one}/timeline`, { schema: { tags, params: IssueParams, response: { 200: items(TimelineEvent) } } }, async (req) => {
    const issue = await service.issue(me(req).id, req.params.workspace_id, req.params.issue_id);
    return { items: await issues.timeline(issue.id) };
  });
  app.post(`${one}/comments`, { schema: { tags, params: IssueParams, body: Comment, response: { 200: items(TimelineEvent) } } }, async (req) => {
    const userId = me(req).id;
    const issue = await service.issue(userId, req.params.workspace_id, req.params.issue_id);
    await issues.event(issue.id, 'comment', { type: 'member', id: userId }, { data: { body: req.body.body } });
    return { items: await issues.timeline(issue.id) };
  });
  app.get(`${one}/task-runs`, { schema: { tags, params: IssueParams, response: { 200: items(IssueTaskRun) } } }, async (req) => {
    const issue = await service.issue(me(req).id, req.params.workspace_id, req.params.issue_id);
    return { items: await runs.list(issue.id) };
  });
  app.get(`${one}/usage`, { schema: { tags, params: IssueParams, response: { 200: Usage } } }, async (req) => {
    const issue = await service.issue(me(req).id, req.params.workspace_id, req.params.issue_id);
    const list = await runs.list(issue.id);
    const input = list.reduce((n, r) => n + r.input_tokens, 0);
    const output = list.reduce((n, r) => n + r.output_tokens, 0);
    return {
      issue_id: issue.id,
      runs: list.length,
      input_tokens: input,
      output_tokens: output,
      total_tokens: input + output,
      items: list.map((r) => ({ run_id: r.id, agent_id: r.agent_id, session_id: r.session_id, status: r.status, input_tokens: r.input_tokens, output_tokens: r.output_tokens })),
    };
  });
};
