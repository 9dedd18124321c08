import t from 'tap';
import type { Page } from 'playwright-core';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { axe, DESKTOP, launch, open, PHONE, sendMessage, shot, signIn } from './browser.js';

/**
 * Every page of the console at 1280 px and at 390 px, with a conversation, a long session title
 * and a second user: axe-core finds no serious or critical issue and nothing scrolls sideways.
 * (admin-tables.test.ts looks at the audit with records.)
 */

const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

t.test('console: every page passes axe and fits at desktop and phone width', { timeout: 150_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = () => ({ text: ['Hello, here is code:\n\n```bash\nls -la\n```\n'] });
  const sid = await createSession(app, app.adminKey, { intent: 'A session with a rather long title that must not overflow the sidebar at all' });
  await app.newUser('bob');
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`);
  await signIn(page, app.adminKey);
  await page.goto(`${app.url}/sessions/${sid}`);
  await sendMessage(page, 'show me code');
  await page.getByText('Hello, here is code:').waitFor();

  // Each page, and what shows once it has loaded what it reads (then axe looks).
  const pages: [string, () => Promise<void>][] = [
    ['/', () => page.getByRole('heading', { name: 'New chat' }).waitFor()],
    [`/sessions/${sid}`, () => page.getByText('Hello, here is code:').waitFor()],
    [`/sessions/${sid}/files`, () => page.locator('.files .entries li, .files p.muted').first().waitFor()],
    [`/sessions/${sid}/checkpoints`, () => page.locator('.cps li').first().waitFor()],
    [`/sessions/${sid}/share`, () => page.getByRole('button', { name: 'Create share link' }).waitFor()],
    [`/sessions/${sid}/policy`, () => page.getByText('Before a tool runs').waitFor()],
    ['/inbox', () => page.getByText('Nothing waits for you.').waitFor()],
    ['/usage', () => page.getByRole('row', { name: /^\d{4}-\d{2}-\d{2}/ }).waitFor()],
    ['/users', () => page.getByRole('row', { name: /^bob/ }).waitFor()],
    ['/keys', () => page.getByRole('listitem').filter({ hasText: 'admin' }).waitFor()],
    ['/audit', () => page.getByText(/^\d+ records?/).waitFor()],
  ];
  const findings: string[] = [];
  const overflow: string[] = [];
  const started = Date.now();
  for (const [width, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(viewport);
    for (const [p, loaded] of pages) {
      // The console's own navigation (no page load): axe-core stays injected, the socket stays up.
      await page.evaluate((to) => {
        history.pushState(null, '', to);
        dispatchEvent(new PopStateEvent('popstate'));
      }, p);
      await loaded();
      findings.push(...(await axe(page)).map((v) => `${p} (${width}): ${v}`));
      const wide = await sideways(page);
      if (wide > 1) overflow.push(`${p} (${width}): ${wide} px`);
      const name = p === '/' ? 'home' : p.replace(/^\//, '').replace(/sessions\/[^/]+/, 'session').replace(/\//g, '-');
      await shot(page, `80-${name}-${width}`);
    }
  }
  t.comment(`${pages.length * 2} page views checked in ${Date.now() - started} ms`);
  t.same(findings, [], 'axe-core: no serious or critical finding on any page, at 1280 and 390 px');
  t.same(overflow, [], 'no page scrolls sideways');

  // Renaming in place stays inside the sidebar, even for a long title.
  await page.setViewportSize(DESKTOP);
  await page.getByRole('button', { name: /^Rename A session with a rather long title/ }).click();
  const side = await page.locator('nav.side').evaluate((el) => el.scrollWidth - el.clientWidth);
  t.ok(side <= 1, `the rename field fits the sidebar (${side} px over)`);
  await shot(page, '82-rename-desktop');
  await page.getByLabel('Session title').press('Escape');

  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
