import t from 'tap';
import { createServer } from 'node:http';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { chat, envChecks, offered } from '../plugins/helpers.js';
import { integrationsLoaded } from './helpers.js';

const responses = { '200': { description: 'ok' } };
const SPEC = {
  openapi: '3.0.3',
  info: { title: 'Slow', version: '1' },
  paths: { '/pets': { get: { operationId: 'listPets', summary: 'List pets', responses } } },
};

t.test('integrations load in the background: the service answers before a slow document arrives, and offers its tools once loaded', async (t) => {
  // The document is served only when the test says so.
  let release!: () => void;
  const served = new Promise<void>((r) => (release = r));
  const asked: string[] = [];
  /** Requests for the document not answered nor given up by the service yet. */
  let held = 0;
  const server = createServer(async (req, res) => {
    asked.push(req.url ?? '');
    if (req.url === '/openapi.json') {
      held++;
      res.once('close', () => held--);
    }
    res.setHeader('content-type', 'application/json');
    if (req.url === '/openapi.json') await served;
    res.end(req.url === '/openapi.json' ? JSON.stringify(SPEC) : '[{"name":"Rex"}]');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    release();
    server.close();
  });
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_INTEGRATIONS: JSON.stringify({ slow: { type: 'openapi', spec: `${base}/openapi.json`, base_url: base } }),
    AGENTSVC_WEBFETCH_ALLOW_PRIVATE: '1',
  });

  // Started and answering while the document is still held.
  await waitFor(() => asked.includes('/openapi.json'), { what: 'the document asked for' });
  const health = await app.api('/api/health');
  t.equal(health.status, 200, '/api/health answers');
  t.equal(held, 1, 'while the request for the document is still waiting for its answer');
  t.match(
    (await envChecks(app))['integrations:slow'],
    { status: 'warn', detail: /^loading: reading and validating its document/, fix: 'wait a moment and check again' },
    'the check says loading',
  );

  // A run started now goes without the integration's tools, and its prompt says why.
  const sid = await createSession(app);
  await chat(app, model, sid, 'list pets', { text: ['not yet'] });
  t.notOk(
    offered(model, 0).some((n) => n.startsWith('api__slow__')),
    'no tool of the loading integration offered',
  );
  t.match(model.requests[0].messages[0].content, /- integration slow \(tools api__slow__\*\): still loading its API description/, 'the system prompt says it is loading');

  release();
  t.match((await integrationsLoaded(app))['integrations:slow'], { status: 'ok', detail: `1 of 1 operations as tools (OpenAPI 3.0.3, ${base}/)` }, 'loaded: ok');
  const { results } = await chat(app, model, sid, 'list pets', { toolCalls: [{ name: 'api__slow__listPets', args: {} }] }, { text: ['Rex'] });
  t.ok(offered(model, 1).includes('api__slow__listPets'), 'its tools are offered once loaded');
  t.notMatch(model.requests[1].messages[0].content, /still loading/, 'and the prompt no longer says loading');
  t.match(results[0], { status: 'done', result: /^HTTP 200\n[\s\S]*Rex/ }, 'and run');
});
