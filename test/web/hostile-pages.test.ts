import t from 'tap';
import { createWebFetchTool, htmlToMarkdown } from '../../src/core/tools/web/index.js';
import { CONVERT_LIMITS } from '../../src/core/tools/web/convert.js';
import { fakeContext, startServer } from './fixtures/helpers.js';
import { withLoopWatch } from './fixtures/loop-watch.js';

t.test('title extraction is linear: many unclosed <title tags (was quadratic: 8 s for 200 KB)', async (t) => {
  const page = '<title x'.repeat(50_000) + '<h1>Body</h1>';
  const start = performance.now();
  const { title } = htmlToMarkdown(page.slice(0, 300) + '<p>x</p>');
  t.equal(title, undefined);
  const { extractTitle } = await import('../../src/core/tools/web/html-to-markdown.js');
  t.equal(extractTitle(page), undefined);
  t.equal(extractTitle('<TITLE lang=en>A <b>b</b> &amp;\n c</title >rest'), 'A b & c');
  t.equal(extractTitle('<title>' + '<'.repeat(200_000)), undefined);
  t.equal(extractTitle('<title>' + '<'.repeat(200_000) + '</title>'), '<'.repeat(2000));
  t.ok(performance.now() - start < 1000, `in ${(performance.now() - start).toFixed(0)} ms`);
});

t.test('WebFetch of hostile pages keeps the event loop free and still answers', async (t) => {
  const timeoutMs = CONVERT_LIMITS.timeoutMs;
  CONVERT_LIMITS.timeoutMs = 4000;
  t.teardown(() => void (CONVERT_LIMITS.timeoutMs = timeoutMs));
  const pages: Record<string, string> = {
    // Unclosed titles make the parser read the rest as title text; the point is the time taken.
    '/titles': '<html><title>' + '<title>'.repeat(60_000) + '<p>TAIL</p>',
    // The HTML parser is quadratic in nesting depth, then turndown overflows the stack.
    '/nested': '<div>'.repeat(20_000) + 'DEEP',
  };
  const srv = await startServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(pages[req.url ?? ''] ?? 'none');
  });
  t.teardown(srv.close);
  const tool = createWebFetchTool({ allowPrivate: true });
  for (const path of Object.keys(pages)) {
    const ctx = fakeContext(({ user }) => user);
    const { value, maxGapMs } = await withLoopWatch(() => tool.execute({ url: srv.url(path), prompt: 'what is there?' }, ctx));
    t.ok(maxGapMs < 300, `${path}: event loop kept ticking (longest gap ${maxGapMs.toFixed(0)} ms)`);
    t.match(value, path === '/nested' ? /could not be converted to Markdown[\s\S]*DEEP/ : /Page content:\n<page>/, `${path}: the page text reached the model`);
  }
});
