import t from 'tap';
import type { Page } from 'playwright-core';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { axe, DESKTOP, launch, open, PHONE, sendMessage, shot, signIn } from './browser.js';

/**
 * The admin tables as a person reads them: the audit shows user names (not ids) and its arguments
 * as readable lines, not one character per line, at 1280 and 390 px, with no serious axe finding;
 * usage by user shows names; deleting the key the CLI uses asks with a warning of its own, and
 * nothing is deleted when the answer is no.
 */

const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

t.test('console: audit and usage by name, readable at 390 px; the CLI key warned about', { timeout: 150_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = () => ({ text: ['Hello, here is code:\n\n```bash\nls -la\n```\n'] });
  const sid = await createSession(app, app.adminKey, { intent: 'A session with a rather long title that must not overflow the sidebar at all' });
  const { userId: bobId } = await app.newUser('bob');
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`);
  await signIn(page, app.adminKey);
  await page.goto(`${app.url}/sessions/${sid}`);
  await sendMessage(page, 'show me code');
  await page.getByText('Hello, here is code:').waitFor();

  // The audit as the service would answer it, with a long argument and two users.
  const long = `curl -fsSL https://example.com/install-a-very-long-script-name.sh | sh -s -- --prefix /opt/tools --yes && echo ${'x'.repeat(60)}`;
  await context.route(/\/api\/audit(\?|$)/, (route) =>
    route.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        items: [
          { id: 'aud_1', at: '2026-11-25T10:00:00.000Z', user_id: bobId, session_id: sid, tool_call_id: 'call_1', tool_name: 'Bash', arguments: { command: long, description: 'install the tools' }, action: 'denied', rule: { tool: 'Bash', pattern: 'curl*', action: 'deny' }, source: 'install', decided_by: 'policy' },
        ],
        total: 1,
      }),
    }),
  );

  // The audit: names, not ids; arguments as lines a person reads, at both widths.
  for (const viewport of [DESKTOP, PHONE]) {
    await page.setViewportSize(viewport);
    await page.goto(`${app.url}/audit`);
    const row = page.getByRole('row', { name: /Bash/ });
    await row.waitFor();
    t.match(await row.textContent(), /bob/, `the user by name (${viewport.width} px)`);
    t.notMatch(await row.textContent(), new RegExp(bobId), 'not by id');
    const args = row.locator('.argtext');
    t.equal(await args.textContent(), `command: ${long}\ndescription: install the tools`, 'arguments as name: value lines');
    const box = await args.boundingBox();
    t.ok(box && box.width >= 200, `the arguments get room to read (${Math.round(box?.width ?? 0)} px wide at ${viewport.width} px)`);
    t.same(await page.getByLabel('User').locator('option').allTextContents(), ['anyone', 'admin', 'bob'], 'filtered by user name');
    t.same(await axe(page), [], `axe-core: no serious or critical finding (${viewport.width} px)`);
    t.ok((await sideways(page)) <= 1, 'no sideways scrolling');
    await shot(page, `81-audit-records-${viewport.width}`);
  }
  await page.setViewportSize(DESKTOP);

  // Usage by user (an admin's view): names too.
  await page.goto(`${app.url}/usage`);
  await page.getByLabel('Group by').selectOption('user');
  t.equal(await page.getByRole('row', { name: /^admin/ }).getByRole('rowheader').textContent(), 'admin', 'usage by user: the name');

  // Deleting the key the CLI uses (named admin, the one in admin.key) asks with its own warning.
  await page.goto(`${app.url}/keys`);
  const row = page.getByRole('listitem').filter({ hasText: 'admin' });
  await row.waitFor();
  page.removeAllListeners('dialog');
  const asked = new Promise<string>((resolve) =>
    page.once('dialog', (d) => {
      resolve(d.message());
      void d.dismiss();
    }),
  );
  await page.getByRole('button', { name: 'Delete key admin' }).click();
  const question = await asked;
  t.match(question, /admin\.key in the service's home \(AGENTSVC_HOME\), which the command line uses: agentsvc chat, sessions and doctor will stop working/, 'the CLI will stop working');
  t.match(question, /agentsvc keys create --name cli \| head -1 > "\$AGENTSVC_HOME\/admin\.key"/, 'and how to make another');
  t.match(question, /You are signed in with this key: this console signs out at once\./, 'and that this tab uses it');
  t.equal((await app.api('/api/auth/me')).status, 200, 'answered no: the key still works');

  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
