import t from 'tap';
import { resolve } from 'node:path';
import { build } from '../helpers/app.js';

t.test('registry: the catalogue with filters and paging, skills orgs, templates', async (t) => {
  const app = await build(t, {
    AGENTSVC_MODELS: 'm1,m2',
    AGENTSVC_MODEL: 'm1',
    AGENTSVC_PLUGINS: resolve('templates/plugin-starter/index.mjs'),
    AGENTSVC_MCP_SERVERS: JSON.stringify({ off: { command: 'x', disabled: true } }),
    AGENTSVC_INTEGRATIONS: JSON.stringify({ pets: { type: 'openapi', spec: { openapi: '3.0.0', paths: {} }, base_url: 'https://pets.example.com', description: 'Pet store' } }),
  });
  const get = async (p: string) => {
    const r = await app.api(p);
    return { status: r.status, body: await r.json(), total: r.headers.get('x-total-count') };
  };
  const all = await get('/api/registry/resources');
  t.equal(all.status, 200);
  const types = new Set(all.body.map((r: any) => r.type));
  for (const type of ['skill', 'integration', 'solution', 'runner', 'model', 'plugin']) t.ok(types.has(type), `lists ${type}`);
  t.equal(Number(all.total), all.body.length);
  for (const r of all.body) t.same(Object.keys(r).sort(), ['description', 'id', 'name', 'source', 'subtype', 'type']);
  t.match(all.body.find((r: any) => r.id === 'skill:csv-insights'), { type: 'skill', subtype: 'global', source: 'agentsvc/csv-insights' });
  t.match(all.body.find((r: any) => r.id === 'integration:pets'), { subtype: 'openapi', description: 'Pet store' });
  t.match(all.body.find((r: any) => r.id === 'runner:local'), { description: /in use/ });
  t.same(all.body.filter((r: any) => r.type === 'plugin').map((r: any) => `${r.name}/${r.subtype}`), ['skills/first-party', 'mcp/first-party', 'integrations/first-party', 'starter/external']);

  const models = await get('/api/registry/resources?type=model');
  t.same(models.body.map((r: any) => r.name), ['m1', 'm2']);
  t.same((await get('/api/registry/resources?type=runner&subtype=docker')).body.map((r: any) => r.id), ['runner:docker']);
  const page = await get('/api/registry/resources?limit=2&offset=1');
  t.same(page.body, all.body.slice(1, 3));
  const sols = (await get('/api/registry/resources?type=solution')).body;
  t.ok(['solution:code-reviewer', 'solution:data-analyst', 'solution:solution-builder'].every((id) => sols.some((r: any) => r.id === id)), 'the shipped solutions');
  t.match(sols.find((r: any) => r.id === 'solution:code-reviewer'), { type: 'solution', name: String, source: 'builtin' });
  for (const q of ['limit=0', 'limit=1001', 'offset=-1', 'limit=x']) t.equal((await get(`/api/registry/resources?${q}`)).status, 422, q);

  t.match((await get('/api/registry/resources/skill:repo-map')).body, { name: 'repo-map' });
  t.equal((await get('/api/registry/resources/skill:nope')).status, 404);

  t.same((await get('/api/registry/skills/orgs')).body, [{ org: 'agentsvc', count: 2, skills: ['csv-insights', 'repo-map'] }]);

  const templates = (await get('/api/registry/templates')).body;
  t.match(templates.find((x: any) => x.type_key === 'mcp' && x.subtype === 'stdio'), { drivers: ['npx', 'node', 'uvx', 'docker'] });
  const npx = (await get('/api/registry/templates/mcp/stdio?driver=npx')).body;
  t.match(npx, { type_key: 'mcp', subtype: 'stdio', driver: 'npx', config_key: 'mcp', template: { everything: { command: 'npx' } } });
  t.equal((await get('/api/registry/templates/mcp/stdio')).body.driver, 'npx', 'the first driver by default');
  t.equal((await get('/api/registry/templates/mcp/stdio?driver=nope')).status, 404);
  t.equal((await get('/api/registry/templates/nope/x')).status, 404);
  t.equal((await app.api('/api/registry/resources', { key: null })).status, 401);

  // Every skills and registry endpoint of docs/plugins.md is in the OpenAPI document.
  const paths = Object.keys((await (await app.api('/api/openapi.json', { key: null })).json()).paths);
  for (const p of [
    '/api/skills',
    '/api/skills/{skill_id}',
    '/api/skills/search',
    '/api/skills/installed',
    '/api/skills/scenario-resources',
    '/api/skill-store/stats',
    '/api/sessions/{session_id}/skills',
    '/api/sessions/{session_id}/skill-stats',
    '/api/sessions/{session_id}/skills:upload',
    '/api/sessions/{session_id}/skills/install',
    '/api/sessions/{session_id}/skills:resync',
    '/api/registry/resources',
    '/api/registry/resources/{resource_id}',
    '/api/registry/skills/orgs',
    '/api/registry/templates',
    '/api/registry/templates/{type_key}/{subtype}',
  ]) {
    t.ok(paths.includes(p), `OpenAPI lists ${p}`);
  }
});
