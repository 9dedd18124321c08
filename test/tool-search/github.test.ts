import t from 'tap';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { chat, offered } from '../plugins/helpers.js';
import { integrationsLoaded } from '../integrations/helpers.js';

// GitHub's REST description as published by @octokit/openapi (1,223 operations): outside material.
const GITHUB = createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json');
const FOUND = 'api__github__repos_list-for-org';

t.test("GitHub's description as an integration: every operation kept, offered through ToolSearch", async (t) => {
  // The fake GitHub: answers the one call the model makes.
  const calls: string[] = [];
  const server = createServer((req, res) => {
    calls.push(`${req.method} ${req.url}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify([{ id: 1, full_name: 'octo/hello' }]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_INTEGRATIONS: JSON.stringify({ github: { type: 'openapi', spec: GITHUB, base_url: base } }),
    AGENTSVC_WEBFETCH_ALLOW_PRIVATE: '1',
  });
  const checks = await integrationsLoaded(app, 50_000);
  t.match(checks['integrations:github'], { status: 'ok', detail: `1223 of 1223 operations as tools (OpenAPI 3.0.3, ${base})` }, 'no operation dropped, by name or schema');

  const sid = await createSession(app);
  const { results, seen } = await chat(
    app,
    model,
    sid,
    'list the repositories of the octo organization',
    { toolCalls: [{ name: 'ToolSearch', args: { query: 'list organization repositories', limit: 5 } }] },
    (body) => {
      const found = String(body.messages.at(-1).content);
      return found.includes(FOUND) ? { toolCalls: [{ name: FOUND, args: { org: 'octo', per_page: 2 } }] } : { text: [`not found: ${found}`] };
    },
    { text: ['done'] },
  );
  t.equal(model.requests.length, 3);
  for (const [i, r] of model.requests.entries()) t.ok(r.tools.length <= 128, `request ${i} carries ${r.tools.length} tools (at most 128)`);
  const first = offered(model, 0);
  t.ok(first.includes('ToolSearch') && !first.some((n) => n.startsWith('api__github__')), 'the first request offers ToolSearch, none of the 1,223 operations');
  t.ok(offered(model, 1).includes(FOUND), 'the found tool is offered from the next request on');
  t.ok(offered(model, 2).includes(FOUND), '... for the rest of the run');
  const schema = model.requests[1].tools.find((x: any) => x.function.name === FOUND).function.parameters;
  t.match(schema, { type: 'object', properties: { org: { type: 'string' }, type: { enum: ['all', 'public', 'private', 'forks', 'sources', 'member'] }, per_page: { type: 'integer' } }, required: ['org'] }, 'the operation schema as the document gives it');
  t.match(results[0], { status: 'done', result: new RegExp(`tool\\(s\\) found[\\s\\S]*- ${FOUND}: List organization repositories`) });
  t.match(results[1], { status: 'done', result: /^HTTP 200\n[\s\S]*octo\/hello/ }, 'the found tool ran');
  // The registry fills the document's defaults in (type, sort, page), as for any tool.
  t.same(calls, ['GET /orgs/octo/repos?type=all&sort=created&per_page=2&page=1'], 'one HTTP call to the (fake) API');
  const notice = seen.find((e) => e.name === 'system:notice' && e.payload.code === 'TOOL_SEARCH');
  t.match(notice?.payload, { query: 'list organization repositories' }, "the search is in the run's events");
  t.equal(notice?.payload.tools.length, 5);
  t.equal(notice?.payload.tools[0], FOUND, 'the operation whose summary the query spells ranks first');
  t.ok(
    seen.some((e) => e.name === 'system:notice' && e.payload.code === 'TOOLS_DEFERRED' && e.payload.deferred === 1223),
    'the run says its tools are searched',
  );
});
