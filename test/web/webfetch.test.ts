import t from 'tap';
import { ToolError } from '../../src/core/tools/types.js';
import { createWebFetchTool, isBlockedAddress } from '../../src/core/tools/web/index.js';
import { fakeContext, startServer } from './fixtures/helpers.js';

const PAGE = `<html><head><title>Release notes</title><script>steal("SCRIPT_TEXT")</script></head>
<body><nav>MENU</nav><h1>Version 2.3</h1><p>Adds <a href="/flags">new flags</a>.</p></body></html>`;

async function pageServer() {
  return startServer((req, res) => {
    switch (req.url) {
      case '/page': res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end(PAGE); return;
      case '/moved': res.writeHead(302, { location: '/page' }); res.end(); return;
      case '/long': res.writeHead(200, { 'content-type': 'text/plain' }); res.end('x'.repeat(5000)); return;
      case '/image': res.writeHead(200, { 'content-type': 'image/png' }); res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0])); return;
      case '/gone': res.writeHead(404, { 'content-type': 'text/html' }); res.end('<h1>Not found</h1>'); return;
      case '/boom': res.writeHead(500); res.end('boom'); return;
      case '/hang': return; // never answers
      default: res.writeHead(404); res.end();
    }
  });
}

async function toolError(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error('expected a ToolError');
}

t.test('shape of the tool', async (t) => {
  const tool = createWebFetchTool({ allowPrivate: false });
  t.equal(tool.name, 'WebFetch');
  t.equal(tool.provider, 'webfetch');
  t.match(tool.description, /http:\/\/ or https:\/\//, 'description read from webfetch.md');
  t.same(tool.parameters.required, ['url', 'prompt']);
  t.equal(tool.parameters.additionalProperties, false);
  t.same((tool.parameters.properties as Record<string, { format?: string }>).url.format, 'uri');
});

t.test('end to end: fetch, convert, ask the model, answer with the final URL', async (t) => {
  const srv = await pageServer();
  t.teardown(srv.close);
  const tool = createWebFetchTool({ allowPrivate: true });
  const ctx = fakeContext(() => '  Version 2.3 adds new flags.  ');
  const out = await tool.execute({ url: srv.url('/moved'), prompt: 'What does 2.3 add?' }, ctx);
  t.equal(out, `URL: ${srv.url('/page')}\n\nVersion 2.3 adds new flags.`);
  t.equal(ctx.llmCalls.length, 1);
  const call = ctx.llmCalls[0];
  t.match(call.system, /only that content/);
  t.match(call.user, 'What does 2.3 add?');
  t.match(call.user, 'Title: Release notes');
  t.match(call.user, '# Version 2.3');
  t.match(call.user, `[new flags](${srv.url('/flags')})`);
  t.notMatch(call.user, 'SCRIPT_TEXT');
  t.notMatch(call.user, 'MENU');
  t.equal(call.signal, ctx.signal, 'the model call can be stopped with the tool call');
  t.ok(call.maxTokens && call.maxTokens > 0);
  t.ok(ctx.progressNotes.length > 0, 'progress reported');
});

t.test('refuses private addresses unless allowed', async (t) => {
  const srv = await pageServer();
  t.teardown(srv.close);
  const tool = createWebFetchTool({ allowPrivate: false });
  const ctx = fakeContext();
  const e = await toolError(tool.execute({ url: srv.url('/page'), prompt: 'x' }, ctx));
  t.match(e.message, /not a public internet address/);
  t.match(e.message, /Only public internet addresses/);
  const e2 = await toolError(tool.execute({ url: 'http://169.254.169.254/latest/meta-data/', prompt: 'x' }, ctx));
  t.match(e2.message, /169\.254\.169\.254/);
  t.equal(srv.requests.length, 0);
  t.equal(ctx.llmCalls.length, 0);
});

t.test('a redirect into a blocked address fails as a ToolError', async (t) => {
  const srv = await startServer((_req, res) => { res.writeHead(302, { location: 'http://[::ffff:127.0.0.1]/admin' }); res.end(); });
  t.teardown(srv.close);
  const tool = createWebFetchTool({
    allowPrivate: false,
    addressPolicy: {
      resolver: async () => [{ address: '127.0.0.1', family: 4 }],
      isBlocked: (ip) => (ip === '127.0.0.1' ? false : isBlockedAddress(ip)),
    },
  });
  const e = await toolError(tool.execute({ url: `http://www.public.example:${srv.port}/`, prompt: 'x' }, fakeContext()));
  t.match(e.message, /::ffff:7f00:1 is not a public internet address/); // the URL parser canonicalises the mapped form
  t.equal(srv.requests.length, 1, 'the public start was fetched, the redirect target was not');
});

t.test('clear errors for bad URLs, HTTP errors and timeouts', async (t) => {
  const srv = await pageServer();
  t.teardown(srv.close);
  const tool = createWebFetchTool({ allowPrivate: true, timeoutMs: 300 });
  const ctx = fakeContext();
  const cases: [string, RegExp][] = [
    ['file:///etc/passwd', /unsupported URL scheme file:.*http:\/\/ or https:\/\//],
    ['ftp://example.com/', /unsupported URL scheme ftp:/],
    ['not a url', /invalid URL/],
    [srv.url('/gone'), /HTTP 404/],
    [srv.url('/boom'), /HTTP 500/],
    [srv.url('/hang'), /Timed out after/],
  ];
  for (const [url, re] of cases) await t.rejects(tool.execute({ url, prompt: 'x' }, ctx), isToolErrorPattern(re), url);
  await t.rejects(tool.execute({ url: '', prompt: 'x' }, ctx), isToolErrorPattern(/url is required/));
  await t.rejects(tool.execute({ url: srv.url('/page'), prompt: ' ' }, ctx), isToolErrorPattern(/prompt is required/));
  t.equal(ctx.llmCalls.length, 0);
});

// tap's rejects() takes a class or an object pattern, not a predicate; ToolError carries isToolError.
function isToolErrorPattern(re: RegExp) {
  return { isToolError: true, message: re };
}

t.test('long content is capped with a note; binary gives a short note', async (t) => {
  const srv = await pageServer();
  t.teardown(srv.close);
  const tool = createWebFetchTool({ allowPrivate: true, maxContentChars: 1000 });
  const ctx = fakeContext();
  await tool.execute({ url: srv.url('/long'), prompt: 'x' }, ctx);
  t.match(ctx.llmCalls[0].user, 'x'.repeat(1000));
  t.notMatch(ctx.llmCalls[0].user, 'x'.repeat(1001));
  t.match(ctx.llmCalls[0].user, /Content truncated: showing the first 1000 of 5000 characters/);

  const small = createWebFetchTool({ allowPrivate: true, maxBytes: 100 });
  await small.execute({ url: srv.url('/long'), prompt: 'x' }, ctx);
  t.match(ctx.llmCalls[1].user, /larger than 100 bytes/);

  await tool.execute({ url: srv.url('/image'), prompt: 'x' }, ctx);
  t.match(ctx.llmCalls[2].user, /Binary content \(image\/png/);
});

t.test('when the model call fails, the page itself is returned', async (t) => {
  const srv = await pageServer();
  t.teardown(srv.close);
  const tool = createWebFetchTool({ allowPrivate: true });
  const ctx = fakeContext(() => { throw new Error('model overloaded'); });
  const out = await tool.execute({ url: srv.url('/page'), prompt: 'x' }, ctx);
  t.type(out, 'string');
  t.match(out as string, new RegExp(`^URL: ${srv.url('/page').replace(/[.]/g, '\\.')}\n\n`));
  t.match(out as string, 'model overloaded');
  t.match(out as string, '# Version 2.3');
});

t.test('a stop aborts the fetch and is not turned into a ToolError', async (t) => {
  const srv = await pageServer();
  t.teardown(srv.close);
  const ctl = new AbortController();
  const tool = createWebFetchTool({ allowPrivate: true });
  setTimeout(() => ctl.abort(new Error('chat:stop')), 100);
  const err = await tool.execute({ url: srv.url('/hang'), prompt: 'x' }, fakeContext(undefined, ctl.signal)).catch((e) => e);
  t.notOk(err instanceof ToolError);
  t.equal(err.message, 'chat:stop');
});
