import t from 'tap';
import { turnText } from '../../src/core/conversation/turns.js';
import { startService } from '../../src/service.js';
import { buildWithModel } from '../helpers/chat.js';
import { launch, open, shot } from './browser.js';

/**
 * The service stopped and started again (same port, same database) while the console watches a
 * run stream: the page says it is reconnecting, then catches up by since_seq and shows exactly what
 * `GET .../messages` stores, nothing lost or repeated, and the next message works.
 */

const WORDS = Array.from({ length: 80 }, (_, i) => `n${i} `);

t.test('console: a service restart mid-stream', { timeout: 240_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) => (String(body.messages.at(-1).content).includes('slow') ? { delayMs: 100, text: WORDS } : { text: ['after the restart'] });
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, app.url + '/');
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // The sidebar's form shows beside any page but the home page (whose composer starts sessions).
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Usage' }).click();
  await page.getByRole('button', { name: 'New session' }).click();
  await page.waitForURL(/\/sessions\/sess_/);
  const sid = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await page.getByLabel('Message', { exact: true }).fill('slow please');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  const last = page.locator('.turns > article.turn.assistant').last();
  await page.waitForFunction(() => (document.querySelector('.turns > article.turn.assistant:last-of-type .md')?.textContent ?? '').includes('n5 '));

  // Stop the service mid-stream (its run ends interrupted) and start it again on the same port.
  const port = Number(new URL(app.url).port);
  // Bounded, so that a shutdown waiting on something says what it waited on instead of hanging the file.
  const stopped = await app.service.stop(20_000);
  t.same(stopped, { outcome: 'clean', failed: [] }, `the first service stopped cleanly (${JSON.stringify(stopped)})`);
  await page.getByText('Reconnecting…').waitFor();
  await shot(page, '11-restart-reconnecting-desktop');
  const again = await startService({ ...app.config, port }, { logFile: false });
  t.teardown(async () => void (await again.stop(20_000)));
  await page.getByText('Reconnecting…').waitFor({ state: 'detached', timeout: 30_000 });
  await page.locator('.turns > article.turn.assistant.ts-interrupted').waitFor({ timeout: 30_000 });

  const res = await fetch(`${again.url}/api/sessions/${sid}/messages`, { headers: { authorization: `Bearer ${app.adminKey}` } });
  const stored = (await res.json()).filter((x: any) => x.role === 'assistant');
  const shown = (await last.locator('.md').textContent())?.trim();
  t.equal(shown, turnText(stored.at(-1)).trim(), 'the view shows exactly the stored text: nothing lost or repeated');
  t.ok(shown && WORDS.join('').startsWith(shown), `a prefix of the stream, each word once (${shown?.split(' ').length} words)`);

  await page.getByRole('button', { name: 'Send' }).waitFor();
  await page.getByLabel('Message', { exact: true }).fill('and now?');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  await t.resolves(page.getByText('after the restart').waitFor(), 'the next message runs on the restarted service');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
