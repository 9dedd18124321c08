import t from 'tap';
import { build } from '../helpers/app.js';
import { importLongSession } from '../helpers/long-session.js';
import { launch, open, shot } from './browser.js';

/**
 * A long session in the chat view: its 5,000 turns open at the newest, only the turns near the
 * viewport are in the DOM wherever the reader scrolls, the oldest is reached by scrolling, and the
 * composer counts the tokens of every turn on the branch (not only the drawn ones).
 */

t.test('console: a 5,000-turn session is virtualised', { timeout: 240_000 }, async (t) => {
  const app = await build(t);
  const sid = await importLongSession(app.url, app.adminKey, 5000, 'Long one');
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, app.url + '/');
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByLabel('API key').press('Enter');
  // Signed in (the key is in the tab's storage) before the page is left: going on at once raced
  // the sign-in, and the session's page then showed the sign-in form.
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  const t0 = Date.now();
  await page.goto(`${app.url}/sessions/${sid}`);
  // Speed is bench/console.ts's job; here the page must get there. Under a full CI run (two test
  // files at once on 2 cores) opening 5,000 turns passed Playwright's default 30 s once.
  await page.getByText('Answer 4999.').first().waitFor({ timeout: 120_000 });
  t.comment(`5,000 turns opened in ${Date.now() - t0} ms`);
  const drawn = () => page.locator('.turns > article.turn').count();
  const atEnd = await drawn();
  t.ok(atEnd > 0 && atEnd < 40, `at the newest turn, ${atEnd} of 5,000 turns are in the DOM`);
  t.equal(await page.getByText('Question 0:').count(), 0, 'the oldest is not');
  t.equal(await page.locator('.composer .usage').textContent(), '250000 in / 125000 out tokens', 'the tokens of all 2,500 agent turns');
  await shot(page, '08-long-session-desktop');

  // Scroll up a step at a time as a reader would: the DOM stays small and the turns stay in order.
  const list = page.locator('.turns');
  let most = atEnd;
  for (let i = 0; i < 20; i++) {
    await list.evaluate((el) => el.scrollBy(0, -el.clientHeight));
    await page.evaluate(() => new Promise(requestAnimationFrame));
    most = Math.max(most, await drawn());
  }
  t.ok(most < 40, `while scrolling up, at most ${most} turns were in the DOM`);
  const indexes = await page.locator('.turns > article.turn').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-index'))));
  t.ok(
    indexes.every((x, i) => i === 0 || x === indexes[i - 1] + 1),
    `the drawn turns are consecutive: ${indexes[0]}..${indexes.at(-1)}`,
  );

  // Jump to the top: the first question is reached and drawn.
  await list.evaluate((el) => el.scrollTo(0, 0));
  await page.getByText('Question 0:').waitFor();
  t.ok((await drawn()) < 40, 'at the top too, only the nearby turns');
  await shot(page, '08-long-session-top-desktop');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
