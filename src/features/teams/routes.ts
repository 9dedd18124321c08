import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import { AddAgent, AddMember, AgentParams, AssistantBody, AssistantQuery, CreateTeamWorkspace, items, Member, MemberParams, PatchTeamWorkspace, TeamWorkspace, TeamWorkspaceAgent, TeamWorkspaceParams } from './schemas.js';
import type { TeamWorkspaceService } from './service.js';
import { iso } from './store.js';

const Session = z.record(z.string(), z.unknown());

/** docs/solutions-and-admin.md "Workspaces and issues": the workspace half (members, agents, assistant session). */
export const teamWorkspaceRoutes: FastifyPluginAsyncZod<{ service: TeamWorkspaceService }> = async (app, { service }) => {
  const { store, agents } = service.d;
  const tags = ['workspaces'];
  const params = TeamWorkspaceParams;
  const base = '/api/prod_workspaces/:workspace_id';

  app.get('/api/prod_workspaces', { schema: { tags, response: { 200: items(TeamWorkspace) } } }, async (req) => ({ items: await store.list(me(req).id) }));
  app.post('/api/prod_workspaces', { schema: { tags, body: CreateTeamWorkspace, response: { 200: TeamWorkspace } } }, async (req) =>
    store.create(me(req).id, req.body.name, req.body.description),
  );
  app.get(base, { schema: { tags, params, response: { 200: TeamWorkspace } } }, async (req) => store.get(me(req).id, req.params.workspace_id));
  app.patch(base, { schema: { tags, params, body: PatchTeamWorkspace, response: { 200: TeamWorkspace } } }, async (req) => store.update(me(req).id, req.params.workspace_id, req.body));
  app.delete(base, { schema: { tags, params, response: { 200: z.object({ deleted: z.boolean() }) } } }, async (req) => {
    await service.removeTeamWorkspace(me(req).id, req.params.workspace_id);
    return { deleted: true };
  });

  const members = async (id: string) =>
    (await store.members(id)).map((m) => ({ user_id: m.user_id, username: m.username, role: m.role, joined_at: iso(m.created_at)! }));
  app.get(`${base}/members`, { schema: { tags, params, response: { 200: items(Member) } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id);
    return { items: await members(req.params.workspace_id) };
  });
  app.post(`${base}/members`, { schema: { tags, params, body: AddMember, response: { 200: items(Member) } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id, 'owner');
    await store.addMember(req.params.workspace_id, req.body);
    return { items: await members(req.params.workspace_id) };
  });
  // The owner removes anyone; a member may leave.
  app.delete(`${base}/members/:user_id`, { schema: { tags, params: MemberParams, response: { 200: items(Member) } } }, async (req) => {
    const userId = me(req).id;
    await store.roleOf(userId, req.params.workspace_id, req.params.user_id === userId ? 'member' : 'owner');
    await service.removeMember(req.params.workspace_id, req.params.user_id);
    return { items: await members(req.params.workspace_id) };
  });

  const agentList = async (id: string) =>
    Promise.all(
      (await store.agents(id)).map(async (a) => ({
        agent_id: a.agent_id,
        name: a.name,
        owner_id: a.owner_id,
        added_by: a.added_by,
        added_at: iso(a.created_at)!,
        agent: await agents.record(a.agent_id),
      })),
    );
  app.get(`${base}/agents`, { schema: { tags, params, response: { 200: items(TeamWorkspaceAgent) } } }, async (req) => {
    await store.roleOf(me(req).id, req.params.workspace_id);
    return { items: await agentList(req.params.workspace_id) };
  });
  // A member brings one of their own production agents; its task runs are sessions of that member.
  app.post(`${base}/agents`, { schema: { tags, params, body: AddAgent, response: { 200: items(TeamWorkspaceAgent) } } }, async (req) => {
    const userId = me(req).id;
    await store.roleOf(userId, req.params.workspace_id);
    const a = await agents.owned(userId, req.body.agent_id);
    if (!a) throw Errors.notFound('production agent');
    await store.addAgent(req.params.workspace_id, { agent_id: a.id, owner_id: userId, name: a.name, added_by: userId });
    return { items: await agentList(req.params.workspace_id) };
  });
  app.delete(`${base}/agents/:agent_id`, { schema: { tags, params: AgentParams, response: { 200: items(TeamWorkspaceAgent) } } }, async (req) => {
    const userId = me(req).id;
    const role = await store.roleOf(userId, req.params.workspace_id);
    const a = await store.agent(req.params.workspace_id, req.params.agent_id);
    if (!a) throw Errors.notFound('agent');
    if (role !== 'owner' && a.owner_id !== userId) throw Errors.forbidden('only the owner of the workspace or of the agent may remove it');
    await store.removeAgent(req.params.workspace_id, req.params.agent_id);
    return { items: await agentList(req.params.workspace_id) };
  });

  app.get(`${base}/assistant-session`, { schema: { tags, params, querystring: AssistantQuery, response: { 200: Session } } }, async (req) =>
    service.assistantSession(me(req).id, req.params.workspace_id, req.query.biz_role_id, me(req).role === 'viewer' && !me(req).isAdmin),
  );
  app.put(`${base}/assistant-session`, { schema: { tags, params, body: AssistantBody, response: { 200: Session } } }, async (req) =>
    service.setAssistantSession(me(req).id, req.params.workspace_id, req.body.biz_role_id, req.body.session_id),
  );
};
