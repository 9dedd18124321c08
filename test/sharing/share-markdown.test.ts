import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, PHONE } from '../console/browser.js';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/**
 * The share page renders the agents' markdown as the terminal client does (issue 31): headings,
 * lists, emphasis, tables, code highlighted in a monospace font; raw HTML from the model shown as
 * text, only safe links (rel=noopener), sub-agents labelled by their description. Checked in
 * headless Chromium at desktop and phone widths, light and dark; screenshots in
 * test/artifacts/share-markdown-*.png.
 */

const ANSWER = [
  '## Findings\n\n',
  'The **report** has *three* parts:\n\n',
  '1. Intro\n2. The `Data` section\n3. Summary\n\n',
  '| file | lines |\n|---|---|\n| a.py | 12 |\n| b.py | 30 |\n\n',
  '```python\ndef total(xs):\n    # add them up\n    return sum(xs) + 42\n```\n\n',
  'See [the docs](https://example.com/docs) or [this](javascript:alert(1)).\n\n',
  '<img src=x onerror="alert(2)"> <script>alert(3)</script>\n\n',
  '![chart](https://example.com/chart.png)\n',
];

function script(body: any) {
  const sys = String(body.messages[0].content);
  const last = body.messages.at(-1);
  if (sys.startsWith('You are a sub-agent')) return { text: [`Done: ${String(last.content).slice(0, 40)}.`] };
  if (last.role === 'tool') return { text: ANSWER };
  return {
    text: ['Two helpers first.'],
    toolCalls: [
      { name: 'Agent', args: { description: 'count python files', prompt: 'Count the Python files' } },
      { name: 'Agent', args: { description: 'read the changelog', prompt: 'Read CHANGELOG.md' } },
    ],
  };
}

t.test('share page: markdown rendered safely, code highlighted, sub-agents labelled', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = script;
  const sid = await createSession(app, app.adminKey, { intent: 'Markdown report' });
  const { sock, seen } = await watch(app, sid);
  t.teardown(() => sock.disconnect());
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'Report on **the files**\n<b>as typed</b>' })).ok, true);
  await untilEnd(seen, sid, 60_000);
  const link = await (await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {} })).json();

  const html = await (await fetch(link.url)).text();
  t.notMatch(html, /<script/i, 'no script element');
  t.notMatch(html, /<img[^>]*onerror/i, "the model's raw HTML is not HTML");
  t.notMatch(html, /href="javascript:/i, 'no javascript: link');
  t.match(html, /&lt;img src=x onerror=&quot;alert\(2\)&quot;&gt;/, 'it is shown as text');

  const browser = await launch(t);
  if (!browser) return;
  const shots = join(process.cwd(), 'test', 'artifacts');
  mkdirSync(shots, { recursive: true });
  for (const [name, viewport, colorScheme] of [
    ['desktop', { width: 1280, height: 900 }, 'light'],
    ['phone', PHONE, 'light'],
    ['phone-dark', PHONE, 'dark'],
  ] as const) {
    const { page, problems, context } = await open(browser, link.url, { viewport, colorScheme });
    const answer = page.locator('article.assistant .md').last();
    t.equal(await answer.locator('h2').textContent(), 'Findings', `${name}: heading`);
    t.equal(await answer.locator('strong').first().textContent(), 'report', `${name}: bold`);
    t.equal(await answer.locator('em').first().textContent(), 'three', `${name}: italic`);
    t.equal(await answer.locator('ol > li').count(), 3, `${name}: numbered list`);
    t.same(await answer.locator('table td').allTextContents(), ['a.py', '12', 'b.py', '30'], `${name}: table`);
    const code = answer.locator('pre.code code.language-python');
    t.equal(await code.locator('.hljs-keyword').first().textContent(), 'def', `${name}: code tokens marked`);
    const style = await code.evaluate((el) => {
      const kw = el.querySelector('.hljs-keyword') as Element;
      const num = el.querySelector('.hljs-number') as Element;
      return { font: getComputedStyle(el).fontFamily, plain: getComputedStyle(el).color, kw: getComputedStyle(kw).color, num: getComputedStyle(num).color };
    });
    t.match(style.font, /monospace/, `${name}: code in a monospace font (${style.font})`);
    t.not(style.kw, style.plain, `${name}: keywords coloured (${style.kw} vs ${style.plain})`);
    t.not(style.num, style.kw, `${name}: numbers another colour`);
    const docs = answer.locator('a[href="https://example.com/docs"]');
    t.equal(await docs.getAttribute('rel'), 'noopener noreferrer nofollow', `${name}: links rel=noopener`);
    t.equal(await answer.locator('a[href^="javascript"]').count(), 0, `${name}: no javascript: link`);
    t.match(await answer.textContent(), /or this\./, `${name}: the unsafe link's text stays`);
    t.equal(await page.locator('main img').count(), 0, `${name}: no image loaded: the raw <img> is text, the markdown image a link`);
    t.equal(await page.locator('[onerror], script').count(), 0, `${name}: no handler, no script`);
    t.match(await answer.textContent(), /<img src=x onerror="alert\(2\)"> <script>alert\(3\)<\/script>/, `${name}: raw HTML shown as text`);
    t.equal(await answer.locator('a.image-link').getAttribute('href'), 'https://example.com/chart.png');
    const user = page.locator('article.user').first();
    t.equal(await user.locator('.text').textContent(), 'Report on **the files**\n<b>as typed</b>', `${name}: what the person typed stays as typed`);

    // Sub-agents: each nested under its call, labelled by its description.
    const tools = page.locator('details.tool');
    for (let i = 0; i < (await tools.count()); i++) await tools.nth(i).locator('summary').click();
    const labels = await page.locator('details.tool .sub article.assistant > header').allTextContents();
    t.same(labels.sort(), ['count python files', 'read the changelog'], `${name}: sub-agents by description`);
    const overflow = Number(await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'));
    t.ok(overflow <= 1, `${name}: no horizontal scrolling of the page (${overflow}px)`);
    t.same(problems, [], `${name}: no CSP violation, no page error`);
    await page.screenshot({ path: join(shots, `share-markdown-${name}.png`), fullPage: true });
    await context.close();
  }
});
