import t from 'tap';
import type { SigninPublic } from '../../src/features/identity/store.js';
import { buildWithModel } from '../helpers/chat.js';
import { launch, open, PHONE, shot, signIn } from './browser.js';

/**
 * The signed-in devices page with sign-ins listed, at 390 and 768 px: the page does not scroll
 * sideways and each sign-in's button can be brought into view. Before, its six-column table (three dates that do not
 * wrap) was 520 px wide and, at 768 px, a label hidden for screen readers in its last column
 * stood outside the table's clip and widened the whole page by 321 px. Under 640 px each sign-in
 * is now a card of labelled fields, like the users and audit tables.
 *
 * The list is the service's answer shaped by its own type (SigninPublic): a key sign-in has no
 * sign-in records, and test/identity/console-signin.test.ts drives real ones through a provider.
 */

const now = new Date().toISOString();
const signins: (SigninPublic & { current: boolean })[] = [
  {
    id: 'si_browser',
    user_id: 'u_admin',
    kind: 'browser',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0 Safari/537.36',
    ip: '2001:db8:85a3::8a2e:370:7334',
    created_at: now,
    last_seen_at: now,
    expires_at: now,
    current: true,
  },
  { id: 'si_cli', user_id: 'u_admin', kind: 'cli', user_agent: 'agentsvc/1.0', ip: '127.0.0.1', created_at: now, last_seen_at: now, expires_at: now, current: false },
];

t.test('console: the devices page fits 390 and 768 px with sign-ins listed', { timeout: 60_000 }, async (t) => {
  const { app } = await buildWithModel(t);
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`, { viewport: PHONE });
  await page.route('**/api/auth/signins', (r) => r.fulfill({ json: { items: signins } }));
  await signIn(page, app.adminKey);
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Devices' }).click();
  const buttons = [page.getByRole('button', { name: 'Sign out of this browser' }), page.getByRole('button', { name: /^Revoke the sign-in of Terminal/ })];
  for (const width of [390, 768]) {
    await page.setViewportSize({ width, height: 900 });
    await buttons[1].waitFor();
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    t.equal(wide, 0, `${width} px: the page does not scroll sideways`);
    for (const b of buttons) {
      // At 768 px the table keeps its columns in a region that scrolls sideways by itself.
      await b.scrollIntoViewIfNeeded();
      const box = await b.boundingBox();
      t.ok(box && box.x >= 0 && box.x + box.width <= width, `${width} px: ${await b.getAttribute('aria-label')} can be brought into view (${box?.x}..${box && box.x + box.width})`);
    }
    await shot(page, `71-devices-${width}`);
  }
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
