import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { launch, open, PHONE, shot, signIn } from './browser.js';

/**
 * The header at phone width, signed in as an admin (every page link shown): two rows (the brand,
 * who and Sign out; then the pages in one row that scrolls sideways), no sideways scroll of the
 * page, and the last page link reachable. Before, the links wrapped and the header took three
 * rows of a 390 px screen.
 */

/** How many rows the header's children sit on (children whose tops differ by under 8 px share a row). */
const headerRows = () => {
  const tops = Array.from(document.querySelectorAll('header.top > *'))
    .filter((e) => (e as HTMLElement).offsetParent !== null && !e.classList.contains('skip'))
    .map((e) => e.getBoundingClientRect().top)
    .sort((a, b) => a - b);
  return tops.filter((top, i) => i === 0 || top - tops[i - 1] >= 8).length;
};

t.test('console: the header takes two rows at 390 px and every page link is reachable', { timeout: 60_000 }, async (t) => {
  const { app } = await buildWithModel(t);
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`, { viewport: PHONE });
  await signIn(page, app.adminKey);
  const pages = page.getByRole('navigation', { name: 'Pages' });
  await pages.getByRole('link', { name: 'Audit' }).waitFor();
  t.equal(await page.evaluate(headerRows), 2, '390 px: two rows');
  t.equal(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0, '390 px: the page does not scroll sideways');
  await shot(page, '72-header-390');
  const last = pages.getByRole('link', { name: 'API docs' });
  await last.scrollIntoViewIfNeeded();
  const box = await last.boundingBox();
  t.ok(box && box.x >= 0 && box.x + box.width <= PHONE.width, `the last page link can be brought into view (${box?.x}..${box && box.x + box.width})`);
  await pages.getByRole('link', { name: 'Audit' }).click();
  await page.waitForURL(`${app.url}/audit`);
  // Wider than a phone, narrower than every link: one row, who and Sign out at its right end, the
  // pages scrolling between (at 768 px who and Sign out used to wrap to a second row, on the left).
  for (const width of [768, 1024]) {
    await page.setViewportSize({ width, height: 800 });
    t.equal(await page.evaluate(headerRows), 1, `${width} px: one row`);
    const out = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    t.ok(out && out.x + out.width <= width && out.x + out.width > width - 40, `${width} px: Sign out at the right end (${out?.x}..${out && out.x + out.width})`);
    t.equal(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0, `${width} px: the page does not scroll sideways`);
    await last.scrollIntoViewIfNeeded();
    const seen = await last.boundingBox();
    const nav = await pages.boundingBox();
    t.ok(seen && nav && seen.x >= nav.x && seen.x + seen.width <= nav.x + nav.width, `${width} px: the last page link scrolls into the pages row`);
    await shot(page, `72-header-${width}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  t.equal(await page.evaluate(headerRows), 1, '1280 px: one row');
  await shot(page, '72-header-1280');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
