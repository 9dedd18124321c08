import t from 'tap';
import type { Page } from 'playwright-core';
import { waitFor } from '../helpers/wait.js';
import { axe, launch, open, shot } from '../console/browser.js';
import { signIn, withProvider } from './oidc.js';

/**
 * The console's side of sign-in with a provider (docs/identity.md "The console"), in headless
 * Chromium against a real oidc-provider (test/identity/provider.mjs): the provider's button beside
 * key sign-in, the provider's own login form, the signed-in devices list and revoking, personal
 * model keys, the notice a refused role gets, sign-out at the provider, and key sign-in switched off.
 */

t.setTimeout(150_000);

const MODELS = JSON.stringify([{ id: 'open-model', personal_key: 'allowed' }, { id: 'plain-model' }]);

/** The provider's pages, as a person fills them: its login form, then its consent form. */
async function atProvider(page: Page, issuer: string, login: string) {
  await page.waitForURL((u) => u.href.startsWith(issuer));
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('x');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

/** GET /api/auth/me as the page's own script asks it (with the page's cookie); null when refused. */
const meIn = (page: Page) =>
  page.evaluate(async () => {
    const r = await fetch('/api/auth/me');
    return r.ok ? ((await r.json()) as { id: string; username: string; role: string; csrf_token: string }) : null;
  });

t.test('console: sign in with the provider, devices, model keys, a refused role, sign out', async (t) => {
  const { app, provider } = await withProvider(t, { AGENTSVC_MODELS: MODELS });
  const browser = await launch(t);
  if (!browser) return;
  const a11y: string[] = [];
  const { page, problems } = await open(browser, `${app.url}/`);

  // The sign-in page offers both: the provider's button and the key form.
  const button = page.getByRole('link', { name: 'Sign in with Test IdP' });
  await button.waitFor();
  t.equal(await page.getByLabel('API key').count(), 1, 'key sign-in is offered beside it');
  await shot(page, '40-signin-provider');
  a11y.push(...(await axe(page)).map((v) => `sign-in: ${v}`));

  await button.click();
  await atProvider(page, provider.issuer, 'bob');
  await page.waitForURL(`${app.url}/`);
  await page.locator('.who', { hasText: 'bob' }).waitFor();
  const me = await meIn(page);
  t.match(me, { username: 'bob', role: 'member' }, 'signed in by the cookie the service set');
  const cookies = await page.context().cookies(app.url);
  t.match(
    cookies.find((c) => c.name === 'agentsvc_signin'),
    { httpOnly: true, sameSite: 'Lax', secure: false },
  );

  // A second sign-in of bob's elsewhere (a terminal or another browser): listed, then revoked here.
  const elsewhere = await signIn(app, 'bob');
  const pages = page.getByRole('navigation', { name: 'Pages' });
  await pages.getByRole('link', { name: 'Devices' }).click();
  await page.waitForURL(/\/devices$/);
  const rows = page.locator('table.devices-list tbody tr');
  await waitFor(async () => (await rows.count()) === 2, { what: 'two sign-ins listed' });
  const mine = page.locator('tr[aria-current="true"]');
  t.match(await mine.textContent(), /Headless Chrome on Linux\s*this browser/, 'this browser, named from its user agent');
  const api = (await (await fetch(`${app.url}/api/auth/signins`, { headers: { cookie: elsewhere.header() } })).json()) as {
    items: { id: string; created_at: string; last_seen_at: string }[];
  };
  t.equal(api.items.length, 2);
  await shot(page, '41-devices');
  a11y.push(...(await axe(page)).map((v) => `devices: ${v}`));
  const other = page.locator('table.devices-list tbody tr:not([aria-current])');
  await other.getByRole('button', { name: /^Revoke the sign-in of / }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Revoked the sign-in of / })
    .waitFor();
  await waitFor(async () => (await rows.count()) === 1, { what: 'the revoked sign-in to leave the list' });
  t.equal((await fetch(`${app.url}/api/auth/me`, { headers: { cookie: elsewhere.header() } })).status, 401, 'the revoked sign-in is refused');

  // Personal model keys: only the model that takes one is listed; added (masked), then deleted.
  await pages.getByRole('link', { name: 'Credentials' }).click();
  await page.waitForURL(/\/model-keys$/);
  const item = page.locator('li.model-key');
  await item.first().waitFor();
  t.equal(await item.count(), 1, 'plain-model takes no personal key and is not listed');
  await page.getByLabel('Add your API key for open-model').fill('sk-personal-0123456789abcdefghij');
  await page.getByRole('button', { name: 'Add key' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved your key for open-model.' }).waitFor();
  await item.getByText('sk-****ghij', { exact: true }).waitFor();
  t.match(await item.textContent(), /Your key: sk-\*\*\*\*ghij · saved /, 'shown masked');
  t.notOk((await page.content()).includes('0123456789abcdefghij'), 'the key itself is nowhere on the page');
  await shot(page, '42-model-keys');
  a11y.push(...(await axe(page)).map((v) => `model keys: ${v}`));
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted your key for open-model.' }).waitFor();
  const cookie = (await page.context().cookies(app.url)).map((c) => `${c.name}=${c.value}`).join('; ');
  const keys = (await (await fetch(`${app.url}/api/me/credentials`, { headers: { cookie } })).json()) as { items: { set: boolean }[] };
  t.same(
    keys.items.map((k) => k.set),
    [false],
    'deleted at the service',
  );

  // A refused role: bob has a session and the new-chat composer open when an admin makes him a
  // viewer; his send is refused in plain words. Then his session is read-only (no message box) and
  // his home has no composer.
  const created = await page.evaluate(async (csrf) => {
    const r = await fetch('/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: '{}' });
    return { status: r.status, body: (await r.json()) as { session_id: string } };
  }, me?.csrf_token ?? '');
  t.equal(created.status, 200, 'a change with the CSRF token goes through');
  await page.goto(`${app.url}/`);
  await page.getByLabel('Message', { exact: true }).fill('hello');
  // The console hears of the new role when the service closes its connection, and then asks who it
  // is (src/features/users; web/src/connection.ts). That question is held here, so the send made
  // meanwhile with the old page reaches the service: the race a person can lose.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await page.route('**/api/auth/me', async (route) => {
    await held;
    await route.continue();
  });
  const patched = await app.api(`/api/admin/users/${me?.id}`, { method: 'PATCH', json: { role: 'viewer' } });
  t.equal(patched.status, 200);
  await page.getByRole('button', { name: 'Send' }).click();
  const refused = page.getByRole('alert').filter({ hasText: 'Your role does not allow this' });
  await refused.waitFor();
  release();
  await page.unroute('**/api/auth/me');
  await page.getByRole('status').filter({ hasText: 'Your access changed: you are signed in as a viewer now.' }).waitFor();
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, 'the composer is gone once the console knows');
  t.match(
    await refused.textContent(),
    /You are signed in as a viewer\. A viewer can read their own sessions, those of their team workspaces and share links, but cannot start sessions, send messages, run tools or change anything\./,
  );
  t.match(await refused.textContent(), /The service said: a viewer may not POST \/api\/sessions/);
  await shot(page, '43-role-refused');
  a11y.push(...(await axe(page)).map((v) => `role refused: ${v}`));
  await page.goto(`${app.url}/sessions/${created.body.session_id}`);
  await page.getByRole('note').filter({ hasText: 'You can read this session; your role cannot send messages.' }).waitFor();
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, "a viewer's session has no message box");
  await page.goto(`${app.url}/`);
  await page.getByRole('heading', { name: 'Nothing open' }).waitFor();
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, "a viewer's home has no composer");
  await app.api(`/api/admin/users/${me?.id}`, { method: 'PATCH', json: { role: 'member' } });

  // Sign out: ended at the service, then at the provider (its confirmation page), back to sign-in.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL((u) => u.href.startsWith(`${provider.issuer}/session/end`));
  await page.getByRole('button', { name: 'Yes, sign me out' }).click();
  await page.waitForURL(`${app.url}/`);
  await button.waitFor();
  t.equal(await meIn(page), null, 'the cookie no longer signs in');
  t.notOk(
    (await page.context().cookies(app.url)).some((c) => c.name === 'agentsvc_signin'),
    'the cookie is gone',
  );
  // The provider's session ended too: signing in again asks for the login again.
  await button.click();
  await t.resolves(page.locator('input[name="login"]').waitFor(), 'the provider asks for the login again');

  // A disabled user: the open console is cut off, and the provider's sign-in is refused with a page.
  await page.locator('input[name="login"]').fill('bob');
  await page.locator('input[name="password"]').fill('x');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  // The provider may ask for consent again, or remember it.
  const consent = page.getByRole('button', { name: 'Continue' });
  await waitFor(async () => page.url() === `${app.url}/` || (await consent.isVisible()), { what: 'the consent page or the console' });
  if (await consent.isVisible()) await consent.click();
  await page.waitForURL(`${app.url}/`);
  await page.locator('.who', { hasText: 'bob' }).waitFor();
  t.equal((await app.api(`/api/admin/users/${me?.id}`, { method: 'PATCH', json: { disabled: true } })).status, 200);
  // Whichever the page hears first: its socket closed by the service, or a REST call refused (then
  // it is back at the sign-in page saying why).
  await page
    .getByRole('alert')
    .filter({ hasText: /^Disconnected: / })
    .or(page.getByText('Your sign-in has ended: it expired, was revoked, or your account was disabled. Sign in again.'))
    .first()
    .waitFor();
  await page.goto(`${app.url}/`);
  await button.click();
  await page.getByRole('heading', { name: 'Sign-in refused' }).waitFor();
  t.match(await page.locator('#message').textContent(), /This account is disabled\. Ask an administrator to enable it\./);
  await shot(page, '44-disabled-refused');
  await app.api(`/api/admin/users/${me?.id}`, { method: 'PATCH', json: { disabled: false } });

  t.same(problems, [], 'no CSP violation or page error');
  t.same(a11y, [], 'axe: no serious or critical finding');
});
