import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { me } from '../../../platform/server/auth.js';
import {
  AgentByKey,
  AgentList,
  AgentRecord,
  CatalogSolutions,
  CreateAgentBody,
  Instantiated,
  Ok,
  PatchAgentBody,
  ProviderKeyParams,
  RecordParams,
  SessionStarted,
} from './schemas.js';
import type { ProdAgent, ProdAgents } from './service.js';

const pub = ({ user_id: _u, ...a }: ProdAgent) => a;

/** docs/solutions-and-admin.md "Production agents": per user; another user's agent is a 404. */
export const prodAgentRoutes: FastifyPluginAsyncZod<{ agents: ProdAgents }> = async (app, { agents }) => {
  const tags = ['production agents'];

  app.get('/api/prod_agents', { schema: { tags, response: { 200: AgentList } } }, async (req) => ({ items: (await agents.list(me(req).id)).map(pub) }));

  // Static segments win over `:provider_key` in fastify's router.
  app.get('/api/prod_agents/catalog/solutions', { schema: { tags, response: { 200: CatalogSolutions } } }, async (req) => agents.catalogSolutions(me(req).id));

  app.get('/api/prod_agents/:provider_key', { schema: { tags, params: ProviderKeyParams, response: { 200: AgentByKey } } }, async (req) => {
    const r = await agents.byProviderKey(me(req).id, req.params.provider_key);
    return { ...r, agent: pub(r.agent) };
  });

  app.post('/api/prod_agents', { schema: { tags, body: CreateAgentBody, response: { 200: AgentRecord } } }, async (req) => pub(await agents.create(me(req).id, req.body)));

  app.patch('/api/prod_agents/:record_id', { schema: { tags, params: RecordParams, body: PatchAgentBody, response: { 200: AgentRecord } } }, async (req) =>
    pub(await agents.update(me(req).id, req.params.record_id, req.body)),
  );

  app.delete('/api/prod_agents/:record_id', { schema: { tags, params: RecordParams, response: { 200: Ok } } }, async (req) => {
    await agents.delete(me(req).id, req.params.record_id);
    return { ok: true };
  });

  app.post('/api/prod_agents/:record_id/instantiate', { schema: { tags, params: RecordParams, response: { 200: Instantiated } } }, async (req) =>
    agents.instantiate(me(req).id, req.params.record_id),
  );

  app.post('/api/prod_agents/:record_id/start-session', { schema: { tags, params: RecordParams, response: { 200: SessionStarted } } }, async (req) =>
    agents.startSession(me(req).id, req.params.record_id),
  );
};
