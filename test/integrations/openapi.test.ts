import t from 'tap';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as stringifyYaml } from 'yaml';
import { loadConfig } from '../../src/platform/config/index.js';
import { firstPartySettings } from '../../src/features/plugin-host/first-party.js';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { chat, offered } from '../plugins/helpers.js';
import { integrationsLoaded } from './helpers.js';

/** A valid document needs responses on every operation. */
const responses = { '200': { description: 'ok' } };

const SPEC = {
  openapi: '3.0.3',
  info: { title: 'Pets', version: '1' },
  servers: [{ url: '/v1' }],
  components: { schemas: { NewPet: { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string', nullable: true } }, required: ['name'] } } },
  paths: {
    '/pets': {
      get: { operationId: 'listPets', summary: 'List pets', responses, parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } }] },
      post: { operationId: 'createPet', summary: 'Create a pet', responses, requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPet' } } } } },
    },
    '/pets/{petId}': { get: { operationId: 'showPetById', responses, parameters: [{ name: 'petId', in: 'path', required: true, schema: { type: 'string' } }] } },
  },
};

async function petApi(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; seen: { method: string; url: string; auth?: string; body: string }[] }> {
  const seen: { method: string; url: string; auth?: string; body: string }[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/openapi.json') return res.end(JSON.stringify(SPEC));
    if (req.url === '/openapi.yaml') {
      res.setHeader('content-type', 'application/yaml');
      return res.end(stringifyYaml(SPEC));
    }
    if (req.headers.authorization !== 'Bearer s3cret') return res.writeHead(401).end('{"error":"unauthorized"}');
    if (req.url?.startsWith('/v1/pets?')) return res.end(JSON.stringify([{ id: 1, name: 'Rex' }]));
    if (req.url === '/v1/pets' && req.method === 'POST') return res.writeHead(201).end(JSON.stringify({ id: 2, ...JSON.parse(body) }));
    if (req.url === '/v1/pets/a%2Fb') return res.end(JSON.stringify({ id: 'a/b' }));
    res.writeHead(404).end('{"error":"no such pet"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen };
}

t.test('an OpenAPI endpoint as tools: operation ids, JSON Schema parameters, credentials from the env bucket', async (t) => {
  const api = await petApi(t);
  const integrations = {
    pets: { type: 'openapi', spec: `${api.url}/openapi.json`, auth: { type: 'bearer', env: 'PETS_TOKEN' } },
    broken: { type: 'openapi', spec: { openapi: '2.0', paths: {} } },
    garbage: { type: 'openapi', spec: 'garbage.json' },
  };
  const { app, model } = await buildWithModel(t, { AGENTSVC_INTEGRATIONS: JSON.stringify(integrations), AGENTSVC_WEBFETCH_ALLOW_PRIVATE: '1' });
  const checks = await integrationsLoaded(app);
  t.match(checks['integrations:broken'], { status: 'fail', detail: /^offers no tools: only OpenAPI 3\.0 and 3\.1/ });
  t.match(checks['integrations:garbage'], { status: 'fail', detail: /^offers no tools: ENOENT/ });
  t.match(checks['integrations:pets'], { status: 'ok', detail: `3 of 3 operations as tools (OpenAPI 3.0.3, ${api.url}/v1)` });
  t.match(checks['integrations:broken'], { status: 'fail', fix: /integrations\.broken/ });

  const sid = await createSession(app);
  const first = await chat(app, model, sid, 'pets', { toolCalls: [{ name: 'api__pets__listPets', args: { limit: 5 } }] }, { text: ['ok'] });
  t.match(first.results[0], { status: 'error', result: /needs PETS_TOKEN: ask the user to set it/ }, 'no credential: a tool error saying where to put it');
  const tools = model.requests[0].tools.map((x: any) => x.function);
  t.same(offered(model, 0).filter((n) => /Pet/.test(n)).sort(), ['api__pets__createPet', 'api__pets__listPets', 'api__pets__showPetById'], 'namespaced by integration');
  t.match(tools.find((f: any) => f.name === 'api__pets__createPet'), {
    description: /Create a pet \(POST \/pets\) \[integration pets\]/,
    parameters: { type: 'object', properties: { body: { type: 'object', properties: { name: { type: 'string' }, tag: { type: ['string', 'null'] } } } }, required: ['body'] },
  });

  t.equal((await app.api('/api/user/env-buckets/default', { method: 'PUT', json: { env: { PETS_TOKEN: 's3cret' } } })).status, 200);
  const { results } = await chat(
    app,
    model,
    sid,
    'pets again',
    {
      toolCalls: [
        { name: 'api__pets__listPets', args: { limit: 5 } },
        { name: 'api__pets__createPet', args: { body: { name: 'Tom' } } },
        { name: 'api__pets__showPetById', args: { petId: 'a/b' } },
        { name: 'api__pets__showPetById', args: { petId: 'nope' } },
        { name: 'api__pets__listPets', args: { limit: 'many' } },
      ],
    },
    { text: ['ok'] },
  );
  t.match(results[0], { status: 'done', result: /^HTTP 200\n\[\n \{\n {2}"id": 1,\n {2}"name": "Rex"/ });
  t.match(results[1], { status: 'done', result: /^HTTP 201\n[\s\S]*"name": "Tom"/ });
  t.match(results[2], { status: 'done', result: /"id": "a\/b"/ }, 'path parameters are encoded');
  t.match(results[3], { status: 'error', result: /^HTTP 404/ });
  t.match(results[4], { status: 'error', result: /limit must be integer/ });
  t.match(api.seen.find((s) => s.method === 'POST'), { url: '/v1/pets', auth: 'Bearer s3cret', body: '{"name":"Tom"}' });
  t.ok(api.seen.some((s) => s.url === '/v1/pets?limit=5'));
});

t.test('the SSRF guard of WebFetch applies: private addresses are refused unless allowed', async (t) => {
  const api = await petApi(t);
  const integrations = {
    fromurl: { type: 'openapi', spec: `${api.url}/openapi.json` },
    inline: { type: 'openapi', spec: SPEC, base_url: `${api.url}/v1` },
  };
  const { app, model } = await buildWithModel(t, { AGENTSVC_INTEGRATIONS: JSON.stringify(integrations) });
  t.match((await integrationsLoaded(app))['integrations:fromurl'], { status: 'fail', detail: /refusing to fetch .*not a public internet address/ });
  const sid = await createSession(app);
  const { results } = await chat(app, model, sid, 'x', { toolCalls: [{ name: 'api__inline__listPets', args: {} }] }, { text: ['ok'] });
  t.match(results[0], { status: 'error', result: /refusing to fetch/ });
  t.equal(api.seen.filter((s) => s.url !== '/openapi.json').length, 0, 'nothing reached the private address');
});

t.test('config: integrations in config.json, malformed entries stop up', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-int-'));
  writeFileSync(join(home, 'config.json'), JSON.stringify({ integrations: { pets: { type: 'openapi', spec: 'pets.json' } } }));
  t.match(firstPartySettings(loadConfig({ env: { AGENTSVC_HOME: home } })).integrations, { pets: { type: 'openapi', spec: 'pets.json' } });
  for (const bad of ['{', '{"Pets": {"type": "openapi", "spec": "x"}}', '{"p": {"type": "graphql", "spec": "x"}}', '{"p": {"type": "openapi"}}', '{"p": {"type": "openapi", "spec": "x", "auth": {"type": "bearer"}}}']) {
    t.throws(() => firstPartySettings(loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_INTEGRATIONS: bad } })), /invalid setting AGENTSVC_INTEGRATIONS/, bad);
  }
});

t.test('two integrations from one YAML document side by side; names that would collide get a hash', async (t) => {
  const api = await petApi(t);
  const clash = {
    openapi: '3.0.3',
    info: { title: 'Clash', version: '1' },
    servers: [{ url: 'http://127.0.0.1:9/' }],
    paths: { '/a': { get: { operationId: 'get.pet', responses } }, '/b': { get: { operationId: 'get_pet', responses } } },
  };
  const integrations = {
    petstore: { type: 'openapi', spec: `${api.url}/openapi.yaml`, auth: { type: 'bearer', env: 'PETS_TOKEN' } },
    zoo: { type: 'openapi', spec: `${api.url}/openapi.yaml`, auth: { type: 'bearer', env: 'PETS_TOKEN' } },
    clash: { type: 'openapi', spec: clash },
  };
  const { app, model } = await buildWithModel(t, { AGENTSVC_INTEGRATIONS: JSON.stringify(integrations), AGENTSVC_WEBFETCH_ALLOW_PRIVATE: '1' });
  const checks = await integrationsLoaded(app);
  t.match(checks['integrations:petstore'], { status: 'ok', detail: /^3 of 3 operations/ }, 'YAML read');
  t.match(checks['integrations:zoo'], { status: 'ok', detail: /^3 of 3 operations/ }, 'the same document twice: both offer their tools');
  t.match(checks['integrations:clash'], { status: 'ok', detail: /^2 of 2 operations/ }, 'no operation left out for its name');
  const sid = await createSession(app);
  await app.api(`/api/sessions/${sid}/env`, { method: 'PUT', json: { env: { PETS_TOKEN: 's3cret' } } });
  const r = await chat(app, model, sid, 'both', { toolCalls: [{ name: 'api__petstore__listPets', args: { limit: 1 } }, { name: 'api__zoo__listPets', args: { limit: 2 } }] }, { text: ['ok'] });
  const names = offered(model, 0);
  // get.pet cannot keep its dot: its name is cut and hashed (stable), get_pet keeps its own.
  for (const n of ['api__petstore__listPets', 'api__zoo__listPets', 'api__clash__get_pet', 'api__clash__get_pet_bae9a712']) t.ok(names.includes(n), `${n} offered`);
  t.match(r.results, [{ status: 'done', result: /^HTTP 200/ }, { status: 'done', result: /^HTTP 200/ }], 'each calls its own integration');
});
