import t from 'tap';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { axe, launch, open, shot } from './browser.js';

/**
 * A budget warning in the web console, in headless Chromium against the real service: the run
 * passes 80% of the session's budget, the service sends `system:notice` BUDGET_WARNING, and the
 * chat shows it above the composer until dismissed (before issue #41 the console dropped it). A
 * reload replays the session's events: the notice is history then and is not shown again.
 */

t.test('console: a budget warning is shown in the chat, dismissed, and not repeated by a reload', { timeout: 180_000 }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_TIMEZONE: 'UTC' });
  const sid = await createSession(app, app.adminKey, { intent: 'Budget demo' });
  const put = await app.api(`/api/sessions/${sid}/budget`, { method: 'PUT', json: { budgets: [{ period: 'day', max_tokens: 100 }] } });
  t.equal(put.status, 200, 'a session budget of 100 tokens a day');
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems } = await open(browser, `${app.url}/`);
  await page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), app.adminKey);
  await page.goto(`${app.url}/sessions/${sid}`);
  await page.getByText('No messages yet.').waitFor();

  model.script({ text: ['Counted ', 'them.'], usage: { prompt_tokens: 70, completion_tokens: 15 } });
  await page.getByLabel('Message', { exact: true }).fill('count them');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  const notices = page.getByRole('list', { name: 'Notices' }).getByRole('listitem');
  await notices.first().waitFor();
  await page.getByText('Counted them.').waitFor();
  t.equal(await notices.count(), 1, 'one warning');
  t.match(await notices.first().textContent(), /^The session budget \(per day: 85 of 100 tokens\) is past 80%; it resets at \d{4}-\d{2}-\d{2}T00:00:00\.000Z\.×$/, "the service's words as a sentence, and the dismiss button");
  t.equal(await notices.first().getAttribute('data-code'), 'BUDGET_WARNING');
  await shot(page, '60-budget-notice-desktop');
  t.same(await axe(page), [], 'no serious accessibility finding with the notice shown');

  await page.getByRole('button', { name: 'Dismiss this notice' }).click();
  await page.getByRole('list', { name: 'Notices' }).waitFor({ state: 'detached' });
  t.equal(await page.getByText('Counted them.').count(), 1, 'the conversation stays');

  // A reload subscribes since 0: the replay holds the notice, shown once already.
  await page.reload();
  await page.getByText('Counted them.').waitFor();
  t.equal(await page.getByRole('list', { name: 'Notices' }).count(), 0, 'history is not announced again');
  t.same(problems, [], 'no CSP violation or page error');
});
