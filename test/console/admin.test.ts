import t from 'tap';
import { build } from '../helpers/app.js';
import { axe, launch, open, PHONE, shot } from './browser.js';

/**
 * The admin pages of the console (docs/console.md): users (list, add, admin rights) and
 * keys (create shown once, masked everywhere else, delete) for an admin key; an ordinary user is
 * offered neither, and a direct link shows why without asking the service.
 */

t.test('console: users and keys for an admin, nothing of them for anyone else', { timeout: 240_000 }, async (t) => {
  const app = await build(t);
  const browser = await launch(t);
  if (!browser) return;
  const a11y: string[] = [];
  const { page, problems, context } = await open(browser, app.url + '/');
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByLabel('API key').press('Enter');
  const pages = page.getByRole('navigation', { name: 'Pages' });
  await pages.getByRole('link', { name: 'Users' }).click();
  await page.waitForURL(/\/users$/);

  // Users: the admin is listed as one; a new user is added through the REST sync and listed.
  const adminRow = page.getByRole('row', { name: /^admin/ });
  await adminRow.getByRole('button', { name: 'Remove admin: admin' }).waitFor();
  await page.getByLabel('Username').fill('carol');
  await page.getByLabel('E-mail (optional)').fill('carol@example.com');
  await page.getByRole('button', { name: 'Add user' }).click();
  await page.getByRole('status').filter({ hasText: 'carol: user created' }).waitFor();
  const carol = page.getByRole('row', { name: /^carol/ });
  t.match(await carol.textContent(), /carol@example\.com/, 'the new user is listed with the e-mail');
  const listed = (await (await app.api('/api/prod_users')).json()).items.find((u: any) => u.username === 'carol');
  t.match(listed, { username: 'carol', email: 'carol@example.com' }, 'and the service has the user');
  await page.getByLabel('Username').fill('carol');
  await page.getByRole('button', { name: 'Add user' }).click();
  await page.getByRole('status').filter({ hasText: 'carol: up to date' }).waitFor();
  t.equal((await (await app.api('/api/prod_users')).json()).items.filter((u: any) => u.username.startsWith('carol')).length, 1, 'adding the same name again makes no second user');

  await carol.getByRole('button', { name: 'Make admin: carol' }).click();
  await page.getByRole('status').filter({ hasText: 'carol is now an admin.' }).waitFor();
  const admins = async () => (await (await app.api('/api/admin/admins')).json()).items.map((a: any) => a.username).sort();
  t.same(await admins(), ['admin', 'carol'], 'granted at once');
  await shot(page, '20-users-desktop');
  a11y.push(...(await axe(page)).map((v) => `users: ${v}`));
  await carol.getByRole('button', { name: 'Remove admin: carol' }).click();
  await page.getByRole('status').filter({ hasText: 'carol is no longer an admin.' }).waitFor();
  t.same(await admins(), ['admin'], 'revoked at once');
  // The last admin: the service refuses (409 LAST_ADMIN) and the page shows its words.
  await adminRow.getByRole('button', { name: 'Remove admin: admin' }).click();
  const refused = await page.getByRole('alert').textContent();
  t.match(refused, /admin/i, `the refusal as the service worded it: ${refused}`);
  t.same(await admins(), ['admin'], 'nothing changed');
  await page.setViewportSize(PHONE);
  await shot(page, '20-users-phone');
  a11y.push(...(await axe(page)).map((v) => `users (phone): ${v}`));
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 1, `no sideways scrolling of the page at 390 px (${overflow})`);
  await page.setViewportSize({ width: 1280, height: 860 });

  // Keys: the secret is shown once, then only masked; it works, and deleting it ends it.
  await pages.getByRole('link', { name: 'Keys' }).click();
  await page.getByLabel('Name of the new key').fill('deploy');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = await page.getByLabel('New key', { exact: true }).inputValue();
  t.match(secret, /^sk-agentsvc-v2-\w{32,}/, 'the plaintext of the new key, once');
  t.equal((await (await app.api('/api/auth/me', { key: secret })).json()).username, 'admin', 'and it is a working key');
  const row = page.getByRole('listitem').filter({ hasText: 'deploy' });
  const masked = (await row.locator('code.masked').textContent()) ?? '';
  t.ok(masked.endsWith(secret.slice(-4)) && !masked.includes(secret.slice(15, 30)), `listed masked: ${masked}`);
  await shot(page, '21-keys-created-desktop');
  a11y.push(...(await axe(page)).map((v) => `keys: ${v}`));
  await page.getByRole('button', { name: 'Done' }).click();
  t.notOk((await page.content()).includes(secret), 'after Done the secret is nowhere in the page');
  await page.reload();
  await page.getByRole('listitem').filter({ hasText: 'deploy' }).waitFor();
  t.notOk((await page.content()).includes(secret), 'nor after a reload');
  t.notOk(JSON.stringify(await page.evaluate(() => ({ ...sessionStorage }))).includes(secret), 'nor in the tab storage');
  await page.getByRole('button', { name: 'Delete key deploy' }).click();
  await row.waitFor({ state: 'detached' });
  t.equal((await app.api('/api/auth/me', { key: secret })).status, 401, 'deleted: the key no longer works');
  await page.setViewportSize(PHONE);
  await shot(page, '21-keys-phone');
  await context.close();

  const dark = await open(browser, app.url + '/users', { colorScheme: 'dark' });
  await dark.page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), app.adminKey);
  await dark.page.reload();
  await dark.page.getByRole('row', { name: /^carol/ }).waitFor();
  await shot(dark.page, '20-users-dark-desktop');
  a11y.push(...(await axe(dark.page)).map((v) => `users (dark): ${v}`));
  await dark.context.close();

  // An ordinary user: no admin links, and a direct link explains itself without a request.
  const { key } = await app.newUser('dora');
  const plain = await open(browser, app.url + '/');
  const asked: string[] = [];
  plain.page.on('request', (r) => asked.push(new URL(r.url()).pathname));
  await plain.page.getByLabel('API key').fill(key);
  await plain.page.getByLabel('API key').press('Enter');
  const nav = plain.page.getByRole('navigation', { name: 'Pages' });
  await nav.getByRole('link', { name: 'Usage' }).waitFor();
  t.same(await nav.getByRole('link').allTextContents(), ['Inbox', 'Usage', 'Devices', 'Credentials', 'API docs'], 'an ordinary user is offered no admin page');
  for (const p of ['users', 'keys', 'audit']) {
    await plain.page.goto(`${app.url}/${p}`);
    await plain.page.getByRole('heading', { name: 'For administrators' }).waitFor();
  }
  await shot(plain.page, '22-admin-only-desktop');
  t.notOk(
    asked.some((p) => /^\/api\/(prod_users|admin|user\/api-keys|audit)/.test(p)),
    'no admin request was made for them',
  );
  t.equal((await app.api('/api/prod_users', { key })).status, 403, 'and the service would refuse it anyway');
  await plain.context.close();

  t.same(a11y, [], 'axe-core: no serious or critical finding');
  t.same(problems, [], 'no CSP violation, no page error');
});
