import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../platform/config/index.js';
import { Errors } from '../../platform/server/errors.js';
import { type FirstParty, firstPartySettings } from '../plugin-host/first-party.js';
import type { PluginReport } from '../plugin-host/loader.js';
import { TEMPLATES } from './templates.js';

export const TYPES = ['skill', 'mcp', 'integration', 'solution', 'runner', 'model', 'plugin'] as const;

const Resource = z.object({
  id: z.string(),
  type: z.enum(TYPES),
  subtype: z.string(),
  name: z.string(),
  description: z.string(),
  source: z.string(),
});
type ResourceT = z.output<typeof Resource>;
const ListQuery = z.object({
  type: z.string().max(64).optional(),
  subtype: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
  offset: z.coerce.number().int().min(0).default(0),
});
const TemplateOut = z.object({ type_key: z.string(), subtype: z.string(), driver: z.string(), description: z.string(), config_key: z.string().nullable(), template: z.unknown() });

export interface RegistryDeps {
  config: Config;
  firstParty: FirstParty;
  plugins: () => PluginReport;
  /** The solutions catalogue (docs/solutions-and-admin.md): id, name, description, layout and where it came from. */
  solutions: () => { id: string; name: string; description: string; layout_type: string; source: string }[];
}

/** Everything this install offers, read from the live configuration and plugins at each request. */
async function catalogue({ config, firstParty, plugins, solutions }: RegistryDeps): Promise<ResourceT[]> {
  const out: ResourceT[] = [];
  for (const s of solutions()) {
    out.push({ id: `solution:${s.id}`, type: 'solution', subtype: s.layout_type || 'default', name: s.name, description: s.description, source: s.source });
  }
  for (const s of (await firstParty.skills().globalSkills()).filter((x) => x.valid)) {
    out.push({ id: `skill:${s.name}`, type: 'skill', subtype: 'global', name: s.name, description: s.description, source: s.source });
  }
  for (const c of firstParty.mcp()) {
    out.push({ id: `mcp:${c.name}`, type: 'mcp', subtype: c.kind, name: c.name, description: `MCP server (${c.state}, ${c.tools.length} tools)`, source: 'config' });
  }
  for (const [name, i] of Object.entries(firstPartySettings(config).integrations)) {
    out.push({ id: `integration:${name}`, type: 'integration', subtype: i.type, name, description: i.description ?? `OpenAPI integration ${name}`, source: 'config' });
  }
  for (const kind of ['local', 'docker'] as const) {
    const active = config.runner.kind === kind;
    const what = kind === 'local' ? 'subprocesses confined by bubblewrap' : `one container per user (${config.runner.image})`;
    out.push({ id: `runner:${kind}`, type: 'runner', subtype: kind, name: kind, description: `${what}${active ? ' (in use)' : ''}`, source: 'builtin' });
  }
  const origin = (() => {
    try {
      return new URL(config.model.baseUrl).origin;
    } catch {
      return 'config';
    }
  })();
  for (const m of config.model.models) {
    out.push({ id: `model:${m}`, type: 'model', subtype: 'openai-compatible', name: m, description: m === config.model.default ? 'default model' : 'model', source: origin });
  }
  for (const p of plugins().loaded) {
    out.push({ id: `plugin:${p.name}`, type: 'plugin', subtype: p.firstParty ? 'first-party' : 'external', name: p.name, description: p.description ?? '', source: p.spec });
  }
  return out;
}

/** The registry endpoints (docs/plugins.md): a read-only catalogue, skills orgs, configuration templates. */
export const registryRoutes: FastifyPluginAsyncZod<RegistryDeps> = async (app, deps) => {
  const tags = ['registry'];
  app.get('/api/registry/resources', { schema: { tags, querystring: ListQuery, response: { 200: z.array(Resource) } } }, async (req, reply) => {
    const { type, subtype, limit, offset } = req.query;
    const all = (await catalogue(deps)).filter((r) => (!type || r.type === type) && (!subtype || r.subtype === subtype));
    reply.header('x-total-count', String(all.length));
    return all.slice(offset, offset + limit);
  });
  app.get('/api/registry/resources/:resource_id', { schema: { tags, params: z.object({ resource_id: z.string().min(1).max(300) }), response: { 200: Resource } } }, async (req) => {
    const r = (await catalogue(deps)).find((x) => x.id === req.params.resource_id);
    if (!r) throw Errors.notFound('resource');
    return r;
  });
  app.get(
    '/api/registry/skills/orgs',
    { schema: { tags, response: { 200: z.array(z.object({ org: z.string(), count: z.number().int(), skills: z.array(z.string()) })) } } },
    async () => {
      const orgs = new Map<string, string[]>();
      for (const s of (await deps.firstParty.skills().globalSkills()).filter((x) => x.valid)) {
        const org = s.source.split('/')[0];
        orgs.set(org, [...(orgs.get(org) ?? []), s.name]);
      }
      return [...orgs].sort(([a], [b]) => a.localeCompare(b)).map(([org, skills]) => ({ org, count: skills.length, skills }));
    },
  );
  app.get(
    '/api/registry/templates',
    { schema: { tags, response: { 200: z.array(z.object({ type_key: z.string(), subtype: z.string(), drivers: z.array(z.string()) })) } } },
    async () => {
      const groups = new Map<string, { type_key: string; subtype: string; drivers: string[] }>();
      for (const t of TEMPLATES) {
        const k = `${t.type_key}/${t.subtype}`;
        const g = groups.get(k) ?? { type_key: t.type_key, subtype: t.subtype, drivers: [] };
        g.drivers.push(t.driver);
        groups.set(k, g);
      }
      return [...groups.values()];
    },
  );
  app.get(
    '/api/registry/templates/:type_key/:subtype',
    { schema: { tags, params: z.object({ type_key: z.string().max(64), subtype: z.string().max(64) }), querystring: z.object({ driver: z.string().max(64).optional() }), response: { 200: TemplateOut } } },
    async (req) => {
      const { type_key, subtype } = req.params;
      const of = TEMPLATES.filter((t) => t.type_key === type_key && t.subtype === subtype);
      const t = req.query.driver ? of.find((x) => x.driver === req.query.driver) : of[0];
      if (!t) throw Errors.notFound(of.length ? `driver ${req.query.driver?.slice(0, 64)} of template ${type_key}/${subtype}` : 'template');
      return t;
    },
  );
};
