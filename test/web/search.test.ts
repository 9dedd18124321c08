import t from 'tap';
import {
  braveBackend, createSearchBackend, createWebSearchTool, searxngBackend, tavilyBackend, type SearchBackend,
} from '../../src/core/tools/web/index.js';
import { fakeContext, startServer } from './fixtures/helpers.js';

const json = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

t.test('createSearchBackend', async (t) => {
  t.equal(createSearchBackend({}), null, 'not configured: no tool');
  t.equal(createSearchBackend({ url: 'http://searx.local' }), null, 'a URL alone does not pick a backend');
  t.equal(createSearchBackend({ backend: 'searxng', url: 'http://searx.local' })?.name, 'searxng');
  t.equal(createSearchBackend({ backend: 'brave', apiKey: 'k' })?.name, 'brave');
  t.equal(createSearchBackend({ backend: 'tavily', apiKey: 'k' })?.name, 'tavily');
  t.throws(() => createSearchBackend({ backend: 'searxng' }), /AGENTSVC_SEARCH_URL/);
  t.throws(() => createSearchBackend({ backend: 'brave' }), /AGENTSVC_SEARCH_API_KEY/);
  t.throws(() => createSearchBackend({ backend: 'tavily' }), /AGENTSVC_SEARCH_API_KEY/);
});

t.test('SearXNG backend', async (t) => {
  const srv = await startServer((_req, res) => json(res, 200, {
    query: 'x',
    results: [
      { title: 'Node &amp; TS', url: 'https://nodejs.org/docs', content: 'The <b>docs</b>\n for   Node' },
      { title: 'Second', url: 'https://example.com/2', content: '' },
      { title: 'no url' },
    ],
  }));
  t.teardown(srv.close);
  const backend = createSearchBackend({ backend: 'searxng', url: srv.url('/searx/') })!;
  const results = await backend.search('node docs', { limit: 5 });
  const u = new URL(srv.requests[0].url, 'http://x');
  t.equal(u.pathname, '/searx/search', 'base path kept, trailing slash handled');
  t.equal(u.searchParams.get('q'), 'node docs');
  t.equal(u.searchParams.get('format'), 'json');
  t.same(results, [
    { title: 'Node & TS', url: 'https://nodejs.org/docs', snippet: 'The docs for Node' },
    { title: 'Second', url: 'https://example.com/2', snippet: '' },
  ]);
  t.equal((await backend.search('node docs', { limit: 1 })).length, 1, 'limit applied');

  await backend.search('q', { allowedDomains: ['https://www.nodejs.org/x'], blockedDomains: ['spam.example'] });
  t.equal(new URL(srv.requests[2].url, 'http://x').searchParams.get('q'), 'q site:www.nodejs.org -site:spam.example');
});

t.test('Brave backend', async (t) => {
  const srv = await startServer((_req, res) => json(res, 200, {
    web: { results: [{ title: 'Brave <strong>one</strong>', url: 'https://a.example/1', description: 'An <strong>important</strong> &quot;thing&quot;' }] },
  }));
  t.teardown(srv.close);
  const backend = braveBackend('brave-key', srv.url('/'));
  const results = await backend.search('hello world', { limit: 50 });
  const req = srv.requests[0];
  const u = new URL(req.url, 'http://x');
  t.equal(u.pathname, '/res/v1/web/search');
  t.equal(u.searchParams.get('q'), 'hello world');
  t.equal(u.searchParams.get('count'), '20', 'count capped at the API maximum');
  t.equal(req.headers['x-subscription-token'], 'brave-key');
  t.equal(req.headers.accept, 'application/json');
  t.same(results, [{ title: 'Brave one', url: 'https://a.example/1', snippet: 'An important "thing"' }]);
  t.same(await createSearchBackend({ backend: 'brave', apiKey: 'k2', url: srv.url() })!.search('x', {}), results, 'URL overrides the API base');
  t.equal(srv.requests[1].headers['x-subscription-token'], 'k2');
});

t.test('Tavily backend', async (t) => {
  const srv = await startServer((_req, res) => json(res, 200, {
    results: [{ title: 'T1', url: 'https://docs.example/t1', content: 'tavily content', score: 0.9 }],
  }));
  t.teardown(srv.close);
  const backend = tavilyBackend('tvly-key', srv.url());
  const results = await backend.search('what is x', { limit: 3, allowedDomains: ['docs.example'], blockedDomains: ['bad.example'] });
  const req = srv.requests[0];
  t.equal(req.method, 'POST');
  t.equal(req.url, '/search');
  t.equal(req.headers.authorization, 'Bearer tvly-key');
  t.match(req.headers['content-type'], /application\/json/);
  const body = JSON.parse(req.body);
  t.equal(body.query, 'what is x', 'domains go in the body, not the query');
  t.equal(body.max_results, 3);
  t.same(body.include_domains, ['docs.example']);
  t.same(body.exclude_domains, ['bad.example']);
  t.same(results, [{ title: 'T1', url: 'https://docs.example/t1', snippet: 'tavily content' }]);
});

t.test('backend failures become ToolErrors', async (t) => {
  const srv = await startServer((req, res) => {
    if (req.url?.startsWith('/bad-key')) return json(res, 401, { error: 'invalid subscription token' });
    if (req.url?.startsWith('/html')) { res.writeHead(200, { 'content-type': 'text/html' }); res.end('<html>nope</html>'); return; }
    if (req.url?.startsWith('/hang')) return;
    res.writeHead(500); res.end('internal');
  });
  t.teardown(srv.close);
  const ctx = fakeContext();
  const run = (backend: SearchBackend) => createWebSearchTool(backend).execute({ query: 'hello' }, ctx);
  await t.rejects(run(braveBackend('k', srv.url('/bad-key'))), { isToolError: true, message: /brave answered HTTP 401: .*invalid subscription token/ });
  await t.rejects(run(searxngBackend(srv.url('/err'))), { isToolError: true, message: /searxng answered HTTP 500/ });
  await t.rejects(run(searxngBackend(srv.url('/html'))), { isToolError: true, message: /not JSON.*format=json/ });
  await t.rejects(run(searxngBackend(srv.url('/hang'), 200)), { isToolError: true, message: /timed out/ });
  const closed = await startServer(() => {});
  const port = closed.port;
  await closed.close();
  await t.rejects(run(tavilyBackend('k', `http://127.0.0.1:${port}`)), { isToolError: true, message: /tavily is unreachable/ });
  t.notMatch(JSON.stringify(srv.requests.map((r) => r.url)), 'k=', 'no key in URLs');
});

t.test('WebSearch tool', async (t) => {
  const seen: { query: string; limit?: number; allowed?: string[]; blocked?: string[] }[] = [];
  const fake: SearchBackend = {
    name: 'fake',
    async search(query, opts) {
      seen.push({ query, limit: opts.limit, allowed: opts.allowedDomains, blocked: opts.blockedDomains });
      t.equal(opts.signal, ctx.signal, 'the tool call signal reaches the backend');
      return [
        { title: 'Docs [v2]', url: 'https://docs.example.com/a', snippet: 'first snippet' },
        { title: 'Blog', url: 'https://blog.example.org/b', snippet: '' },
        { title: 'Docs dup', url: 'https://docs.example.com/a', snippet: 'again' },
        { title: 'Spam', url: 'https://spam.example.com/c', snippet: 'buy' },
      ];
    },
  };
  const ctx = fakeContext();
  const tool = createWebSearchTool(fake, { limit: 5 });
  t.equal(tool.name, 'WebSearch');
  t.equal(tool.provider, 'search');
  t.same(tool.parameters.required, ['query']);
  t.equal((tool.parameters.properties as Record<string, { minLength?: number }>).query.minLength, 2);
  t.equal(tool.parameters.additionalProperties, false);

  const out = await tool.execute({ query: ' node docs ' }, ctx);
  t.equal(out, [
    'Search results for "node docs":',
    '',
    '1. [Docs \\[v2\\]](https://docs.example.com/a)',
    '   first snippet',
    '2. [Blog](https://blog.example.org/b)',
    '3. [Spam](https://spam.example.com/c)',
    '   buy',
  ].join('\n'));
  t.same(seen[0], { query: 'node docs', limit: 5, allowed: [], blocked: [] });

  const allowed = await tool.execute({ query: 'node docs', allowed_domains: ['example.com'] }, ctx);
  t.match(allowed, '1. [Docs');
  t.match(allowed, '2. [Spam]');
  t.notMatch(allowed, 'blog.example.org');
  t.equal(seen[1].limit, 10, 'asks for more when post-filtering');
  t.same(seen[1].allowed, ['example.com']);

  const blocked = await tool.execute({ query: 'node docs', blocked_domains: ['https://spam.example.com/'] }, ctx);
  t.notMatch(blocked, 'spam');
  t.match(blocked, '2. [Blog]');

  const none = await tool.execute({ query: 'node docs', allowed_domains: ['nowhere.example'] }, ctx);
  t.equal(none, 'No results for "node docs".');
  await t.rejects(tool.execute({ query: ' a ' }, ctx), { isToolError: true, message: /at least 2/ });

  const failing = createWebSearchTool({ name: 'x', search: async () => { throw new Error('kaput'); } });
  await t.rejects(failing.execute({ query: 'hello' }, ctx), { isToolError: true, message: /search failed: kaput/ });
});

t.test('WebSearch end to end over a fake SearXNG', async (t) => {
  const srv = await startServer((_req, res) => json(res, 200, { results: [{ title: 'R', url: 'https://r.example/', content: 'snippet r' }] }));
  t.teardown(srv.close);
  const tool = createWebSearchTool(createSearchBackend({ backend: 'searxng', url: srv.url() })!);
  t.equal(await tool.execute({ query: 'anything' }, fakeContext()), 'Search results for "anything":\n\n1. [R](https://r.example/)\n   snippet r');
});
