import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../../platform/server/auth.js';
import { Runtime } from '../agents/schemas.js';
import type { SolutionAgents } from '../solution-agents/service.js';
import type { Documents, Kind } from './documents.js';
import type { ProdSolutions } from './records.js';
import {
  AgentCreateBody,
  AgentListQuery,
  AgentParams,
  AgentPatchBody,
  ArchDoc,
  CreateBody,
  DagDoc,
  IdParams,
  Ok,
  PatchBody,
  PublishArchBody,
  PublishDagBody,
  Record,
  RecordList,
  RollbackBody,
  SaveArchBody,
  SaveDagBody,
  SessionBody,
  Validation,
  ValidateArchBody,
  ValidateDagBody,
  VersionList,
  VersionParams,
} from './schemas.js';

export interface ProdSolutionRouteDeps {
  records: ProdSolutions;
  documents: Documents;
  agents: SolutionAgents;
}

/** docs/solutions-and-admin.md "Production solutions (multi-agent DAG)" and its agents. */
export const prodSolutionRoutes: FastifyPluginAsyncZod<ProdSolutionRouteDeps> = async (app, { records, documents, agents }) => {
  const tags = ['production solutions'];
  const params = IdParams;

  // Static segments (agents, dag, architecture) win over `:prod_solution_id` in fastify's router.
  const AgentOut = z.object({
    id: z.string(),
    name: z.string(),
    runtime_id: z.string(),
    runtime: Runtime.nullable(),
    visibility: z.string(),
    instructions: z.string(),
    status: z.string(),
    archived: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  });
  app.get('/api/prod_solution/agents/runtimes', { schema: { tags, response: { 200: z.object({ items: z.array(Runtime) }) } } }, async () => ({ items: agents.runtimes() }));
  app.post('/api/prod_solution/agents', { schema: { tags, body: AgentCreateBody, response: { 200: AgentOut } } }, async (req) => agents.create(me(req).id, req.body));
  app.get('/api/prod_solution/agents', { schema: { tags, querystring: AgentListQuery, response: { 200: z.object({ items: z.array(AgentOut) }) } } }, async (req) =>
    agents.list(me(req).id, req.query.include_archived),
  );
  app.get('/api/prod_solution/agents/:agent_id', { schema: { tags, params: AgentParams, response: { 200: AgentOut } } }, async (req) => agents.get(me(req).id, req.params.agent_id));
  app.patch('/api/prod_solution/agents/:agent_id', { schema: { tags, params: AgentParams, body: AgentPatchBody, response: { 200: AgentOut } } }, async (req) =>
    agents.update(me(req).id, req.params.agent_id, req.body),
  );

  app.post('/api/prod_solution', { schema: { tags, body: CreateBody, response: { 200: Record } } }, async (req) => records.create(me(req).id, req.body));
  app.get('/api/prod_solution', { schema: { tags, response: { 200: RecordList } } }, async (req) => ({ items: await records.list(me(req).id) }));
  app.get('/api/prod_solution/:prod_solution_id', { schema: { tags, params, response: { 200: Record } } }, async (req) => records.get(me(req).id, req.params.prod_solution_id));
  app.patch('/api/prod_solution/:prod_solution_id', { schema: { tags, params, body: PatchBody, response: { 200: Record } } }, async (req) =>
    records.update(me(req).id, req.params.prod_solution_id, req.body),
  );
  app.delete('/api/prod_solution/:prod_solution_id', { schema: { tags, params, response: { 200: Ok } } }, async (req) => {
    await records.delete(me(req).id, req.params.prod_solution_id);
    return { ok: true };
  });
  app.put('/api/prod_solution/:prod_solution_id/session', { schema: { tags, params, body: SessionBody, response: { 200: Ok } } }, async (req) => {
    await records.setSession(me(req).id, req.params.prod_solution_id, req.body.session_id);
    return { ok: true };
  });

  // The DAG and the architecture: the same routes over a different key.
  const docRoutes = (kind: Kind) => {
    const base = `/api/prod_solution/${kind}/:prod_solution_id`;
    const Doc = kind === 'dag' ? DagDoc : ArchDoc;
    const Save = kind === 'dag' ? SaveDagBody : SaveArchBody;
    const Check = kind === 'dag' ? ValidateDagBody : ValidateArchBody;
    const Publish = kind === 'dag' ? PublishDagBody : PublishArchBody;
    const doc = (b: object) => (b as { [k: string]: Record<string, unknown> | undefined })[kind];
    const dtags = [`production solution ${kind}`];

    app.get(base, { schema: { tags: dtags, params, response: { 200: Doc } } }, async (req) => documents.current(me(req).id, req.params.prod_solution_id, kind));
    app.put(base, { schema: { tags: dtags, params, body: Save, response: { 200: Doc } } }, async (req) =>
      documents.save(me(req).id, req.params.prod_solution_id, kind, req.body.base_version, doc(req.body)!, req.body.message),
    );
    app.post(`${base}/validate`, { schema: { tags: dtags, params, body: Check, response: { 200: Validation } } }, async (req) =>
      documents.validate(me(req).id, req.params.prod_solution_id, kind, doc(req.body)),
    );
    app.post(`${base}/publish`, { schema: { tags: dtags, params, body: Publish, response: { 200: Doc } } }, async (req) =>
      documents.publish(me(req).id, req.params.prod_solution_id, kind, { doc: doc(req.body), version: req.body.version, message: req.body.message }),
    );
    app.get(`${base}/versions`, { schema: { tags: dtags, params, response: { 200: VersionList } } }, async (req) => documents.versions(me(req).id, req.params.prod_solution_id, kind));
    app.get(`${base}/versions/:version`, { schema: { tags: dtags, params: VersionParams, response: { 200: Doc } } }, async (req) =>
      documents.version(me(req).id, req.params.prod_solution_id, kind, req.params.version),
    );
    app.delete(`${base}/versions/:version`, { schema: { tags: dtags, params: VersionParams, response: { 200: Ok } } }, async (req) => {
      await documents.deleteVersion(me(req).id, req.params.prod_solution_id, kind, req.params.version);
      return { ok: true };
    });
    app.post(`${base}/rollback`, { schema: { tags: dtags, params, body: RollbackBody, response: { 200: Doc } } }, async (req) =>
      documents.rollback(me(req).id, req.params.prod_solution_id, kind, req.body.from_version, req.body.message),
    );
  };
  docRoutes('dag');
  docRoutes('architecture');
};
