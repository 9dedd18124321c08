import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { launch, open } from './browser.js';

/**
 * A long session opens on its newest 200 turns, with the rest one click away, and shows the
 * tokens its turns used.
 */

t.test('console: a long session draws its newest turns first', { timeout: 240_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) => ({ text: [`reply ${String(body.messages.at(-1).content)}`], usage: { prompt_tokens: 7, completion_tokens: 3 } });
  const sid = await createSession(app, app.adminKey, { intent: 'Long one' });
  const { sock, seen } = await watch(app, sid);
  for (let i = 1; i <= 101; i++) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message: `m${i}` })).ok, true);
    await untilEnd(seen, sid, 20_000, i);
  }
  sock.disconnect();
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, app.url + '/');
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByLabel('API key').press('Enter');
  const t0 = Date.now();
  await page.goto(`${app.url}/sessions/${sid}`);
  await page.getByText('reply m101').waitFor();
  t.comment(`202 turns opened in ${Date.now() - t0} ms`);
  t.equal(await page.locator('.turns > article.turn').count(), 200, 'the newest 200 turns are drawn');
  t.equal(await page.getByText('reply m1', { exact: true }).count(), 0, 'the oldest are not');
  await page.getByRole('button', { name: 'Show 2 earlier turns (2 hidden)' }).click();
  await page.getByText('reply m1', { exact: true }).waitFor();
  t.equal(await page.locator('.turns > article.turn').count(), 202, 'all of them once asked');
  t.equal(await page.locator('.composer .usage').textContent(), '707 in / 303 out tokens', 'the tokens of the turns on this branch');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
