import t from 'tap';
import type { Page } from 'playwright-core';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { DESKTOP, launch, open, PHONE, shot, signIn } from './browser.js';

/**
 * One way to start a session on screen at a time, at 390, 768 and 1280 px (docs/console.md
 * "Working in the chat"). Before, the home page showed the new chat's composer and the sidebar's
 * "New session" form together; at 390 px one stood above the other. Now the home page's composer
 * is its one form, reachable (in view horizontally, not covered, and it starts the session), and
 * the sidebar's form shows beside a session or a page instead. Nothing scrolls sideways.
 */

const TABLET = { width: 768, height: 1024 };

/** The session-starting forms a person sees: the composer of the home page, the sidebar's form. */
const visibleForms = (page: Page) =>
  page.evaluate(() =>
    (
      [
        ['composer', '.new-chat form'],
        ['sidebar', 'nav.side form[aria-label="New session"]'],
      ] as const
    )
      .filter(([, sel]) => {
        const el = document.querySelector(sel);
        if (!el?.checkVisibility({ visibilityProperty: true })) return false;
        const r = el.getBoundingClientRect();
        return r.width > 0 && r.height > 0;
      })
      .map(([name]) => name),
  );

/** How far the page, the main area and the sidebar scroll sideways, in px. */
const sideways = (page: Page) =>
  page.evaluate(() =>
    [document.documentElement, document.querySelector('main'), document.querySelector('nav.side')].map((el) => (el ? el.scrollWidth - el.clientWidth : 0)),
  );

/** Each control of `form` lies inside the viewport's width and is what a tap on its middle reaches. */
const reachable = (page: Page, form: string) =>
  page.evaluate((sel) => {
    const out: string[] = [];
    for (const el of Array.from(document.querySelectorAll<HTMLElement>(`${sel} textarea, ${sel} input, ${sel} select, ${sel} button`))) {
      el.scrollIntoView({ block: 'center', inline: 'nearest' });
      const r = el.getBoundingClientRect();
      const name = el.getAttribute('aria-label') ?? el.id ?? el.textContent;
      if (r.left < 0 || r.right > document.documentElement.clientWidth) out.push(`${name}: ${Math.round(r.left)}..${Math.round(r.right)} px`);
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      if (!hit || !(hit === el || el.contains(hit))) out.push(`${name}: covered by ${hit?.tagName.toLowerCase()}.${hit?.className}`);
    }
    return out;
  }, form);

t.test('console: one new-session form at a time, reachable, nothing sideways, at 390, 768 and 1280 px', { timeout: 90_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = () => ({ text: ['Hello from a phone.'] });
  const sid = await createSession(app, app.adminKey, { intent: 'An older session whose title is rather long and must not push the page sideways' });
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`, { viewport: PHONE });
  await signIn(page, app.adminKey);
  const entry = page.getByRole('navigation', { name: 'Sessions' }).getByRole('link', { name: /^An older session/ });

  for (const [name, viewport] of [
    ['390', PHONE],
    ['768', TABLET],
    ['1280', DESKTOP],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.goto(`${app.url}/`);
    await page.getByRole('heading', { name: 'New chat' }).waitFor();
    await entry.waitFor();
    t.same(await visibleForms(page), ['composer'], `${name} px, home: the composer is the one new-session form`);
    t.same(await reachable(page, '.new-chat form'), [], `${name} px, home: every control of the composer is in view and not covered`);
    t.same(await sideways(page), [0, 0, 0], `${name} px, home: nothing scrolls sideways`);
    await shot(page, `70-home-${name}`);

    await page.goto(`${app.url}/sessions/${sid}`);
    await page.getByText('No messages yet.').waitFor();
    // At 390 px the session has the screen (the list is one tap back); wider, the sidebar's form
    // is the way to start another session from here.
    t.same(await visibleForms(page), name === '390' ? [] : ['sidebar'], `${name} px, a session open: ${name === '390' ? 'no form' : "the sidebar's form only"}`);
    if (name !== '390') t.same(await reachable(page, 'nav.side form[aria-label="New session"]'), [], `${name} px: the sidebar's form is in view and not covered`);
    t.same(await sideways(page), [0, 0, 0], `${name} px, a session open: nothing scrolls sideways`);
    await shot(page, `70-session-${name}`);
  }

  // At 390 px a person starts a session from the home page: back from a session, write, send.
  await page.setViewportSize(PHONE);
  await page.getByRole('link', { name: 'Back to the sessions' }).click();
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  const box = page.locator('#first-message');
  await box.fill('Hello from a phone');
  await page.locator('.new-chat form').getByRole('button', { name: 'Send' }).click();
  await page.waitForURL(/\/sessions\/sess_/);
  await page.getByText('Hello from a phone.').waitFor();
  await page.getByRole('link', { name: 'Back to the sessions' }).click();
  await page.getByRole('navigation', { name: 'Sessions' }).getByRole('link', { name: /^Hello from a phone/ }).waitFor();
  t.pass('the session started at 390 px is listed under the composer');

  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
