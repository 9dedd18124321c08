import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { axe, launch, open, shot, signIn } from './browser.js';

/**
 * The service closes a person's connections when their access changes (a new role), so the new
 * access applies to what they follow. The open console must not read that as a revoked key: it
 * asks who it is, connects again, says what changed and redraws for the new role. A disabled
 * account is signed out with the reason. Before, both showed "Disconnected: ... was the key
 * deleted?" and the header kept the old role until a reload.
 */

t.setTimeout(120_000);

t.test('console: a role changed while it is open; then the account disabled', async (t) => {
  const { app } = await buildWithModel(t);
  const bob = await app.newUser('bob');
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems } = await open(browser, `${app.url}/`);
  await signIn(page, bob.key);
  await page.getByLabel('Message', { exact: true }).waitFor();
  t.equal(await page.locator('header .badge').count(), 0, 'a member has no role badge');

  t.equal((await app.api(`/api/admin/users/${bob.userId}`, { method: 'PATCH', json: { role: 'viewer' } })).status, 200);
  const notice = page.getByRole('status').filter({ hasText: 'Your access changed' });
  await notice.waitFor();
  t.match(await notice.textContent(), /^Your access changed: you are signed in as a viewer now\./);
  await page.locator('header .badge', { hasText: 'viewer' }).waitFor();
  await page.getByRole('heading', { name: 'Nothing open' }).waitFor();
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, "the viewer's home has no composer");
  t.equal(await page.getByRole('alert').filter({ hasText: 'Disconnected' }).count(), 0, 'no "Disconnected" alert');
  await shot(page, 'access-changed');
  const a11y = await axe(page);
  await notice.getByRole('button', { name: 'Dismiss' }).click();
  await notice.waitFor({ state: 'detached' });

  // Made a member again: the composer comes back, without a reload.
  t.equal((await app.api(`/api/admin/users/${bob.userId}`, { method: 'PATCH', json: { role: 'member' } })).status, 200);
  await page.getByRole('status').filter({ hasText: 'you are signed in as a member now' }).waitFor();
  await page.getByLabel('Message', { exact: true }).waitFor();
  t.equal(await page.locator('header .badge').count(), 0, 'the viewer badge is gone');

  // Disabled: signed out, with the reason, not left on a dead page.
  t.equal((await app.api(`/api/admin/users/${bob.userId}`, { method: 'PATCH', json: { disabled: true } })).status, 200);
  await page.getByLabel('API key').waitFor();
  await page.getByText('missing or invalid API key').waitFor();
  await shot(page, 'access-disabled');
  t.same(a11y, [], 'axe: no serious or critical finding');
  t.same(problems, [], 'no page error');
});
