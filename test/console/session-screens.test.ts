import t from 'tap';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { buildWithModel } from '../helpers/chat.js';
import { axe, launch, open, PHONE, shot } from './browser.js';

/**
 * The console around a conversation, in headless Chromium: files (browse, upload, preview,
 * download), checkpoints (rewind), share links (create, revoke), API keys (create, delete) and the
 * sessions list (pin, rename, delete), each screen at desktop and phone width.
 */

async function send(page: Page, text: string) {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByText(`answer to ${text}`).waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
}

t.test('console: files, checkpoints, share links, session list actions', { timeout: 300_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) => ({ text: [`answer to ${String(body.messages.at(-1).content)}`] });
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, app.url + '/');
  const a11y: string[] = [];
  const both = async (name: string) => {
    a11y.push(...(await axe(page)).map((v) => `${name}: ${v}`));
    await shot(page, `${name}-desktop`);
    await page.setViewportSize(PHONE);
    await shot(page, `${name}-phone`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    t.ok(overflow <= 1, `${name}: no sideways scrolling at 390 px (${overflow})`);
    await page.setViewportSize({ width: 1280, height: 860 });
  };

  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // The sidebar's form shows beside any page but the home page (whose composer starts sessions).
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Usage' }).click();
  await page.getByPlaceholder('New session title (optional)').fill('Workspace demo');
  await page.getByRole('button', { name: 'New session' }).click();
  await page.waitForURL(/\/sessions\/sess_/);
  const sid = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await send(page, 'first message');
  await send(page, 'second message');

  // Files: an empty workspace, then an upload, a folder, a preview and a download.
  await page.getByRole('link', { name: 'Files' }).click();
  await page.waitForURL(/\/files$/);
  await page.locator('input[type=file]').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the console\n') });
  await page.getByText('Uploaded hello.txt').waitFor();
  t.equal(await (await app.api(`/api/sessions/${sid}/files/hello.txt`)).text(), 'hello from the console\n', 'uploaded into the workspace');
  t.equal((await app.api(`/api/sessions/${sid}/files/docs/readme.md`, { method: 'PUT', json: { content: '# Read me\n' } })).status, 200);
  await page.getByRole('link', { name: 'Chat' }).click();
  await page.getByRole('link', { name: 'Files' }).click();
  await page.getByRole('button', { name: 'docs/' }).click();
  await page.getByRole('button', { name: 'Preview readme.md' }).click();
  t.equal(await page.locator('.preview pre').textContent(), '# Read me\n', 'a text file previewed');
  await both('08-files');
  await page.getByRole('button', { name: 'workspace', exact: true }).click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download hello.txt' }).click()]);
  t.equal(download.suggestedFilename(), 'hello.txt');
  t.equal(readFileSync((await download.path())!, 'utf8'), 'hello from the console\n', 'downloaded with the key, byte for byte');

  // Checkpoints: rewind to the second message; the chat shows the first exchange only, and the
  // removed message is back in the composer.
  await page.getByRole('link', { name: 'Checkpoints' }).click();
  await page.getByRole('button', { name: /^Rewind here/ }).nth(1).waitFor();
  t.equal(await page.getByRole('button', { name: /^Rewind here/ }).count(), 2, 'one checkpoint per message');
  await both('09-checkpoints');
  await page.getByRole('button', { name: /^Rewind here/ }).nth(1).click();
  await page.waitForURL(new RegExp(`/sessions/${sid}$`));
  await page.getByText('answer to first message').waitFor();
  t.equal(await page.getByText('answer to second message').count(), 0, 'the rewound turns are gone from the view');
  t.equal(await page.getByLabel('Message', { exact: true }).inputValue(), 'second message', 'the removed message is back in the composer');
  const turns = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(turns.length, 2, 'and from the stored branch');

  // Share links: create, open without a key, revoke.
  await page.getByRole('link', { name: 'Share' }).click();
  await page.getByRole('button', { name: 'Create share link' }).click();
  const url = await page.getByLabel('Share link', { exact: true }).inputValue();
  t.match(url, new RegExp(`^${app.url}/share/share_`), 'a link to the share page');
  t.equal((await fetch(url)).status, 200, 'it opens without a key');
  await both('10-share');
  await page.getByRole('button', { name: 'Revoke' }).click();
  await page.getByText('Link revoked').waitFor();
  t.equal((await fetch(url)).status, 404, 'revoked: gone');

  // API keys: create one (shown once, and it works), delete it (and it no longer does).
  await page.getByRole('link', { name: 'Keys' }).click();
  await page.waitForURL(/\/keys$/);
  await page.getByPlaceholder('Name of the new key').fill('laptop');
  await page.getByRole('button', { name: 'Create key' }).click();
  const made = await page.getByLabel('New key', { exact: true }).inputValue();
  t.match(made, /^sk-agentsvc-v2-/, 'the new key, shown once');
  t.equal((await app.api('/api/auth/me', { key: made })).status, 200, 'and it signs in');
  await page.getByRole('button', { name: 'Delete key laptop' }).waitFor();
  await both('11-keys');
  await page.getByRole('button', { name: 'Delete key laptop' }).click();
  await page.getByRole('button', { name: 'Delete key laptop' }).waitFor({ state: 'detached' });
  t.equal((await app.api('/api/auth/me', { key: made })).status, 401, 'deleted: refused');
  await page.getByRole('link', { name: /Workspace demo/ }).click();

  // The list: pin, rename, delete.
  await page.getByRole('button', { name: 'Pin' }).click();
  await page.getByRole('button', { name: 'Unpin' }).waitFor();
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).is_pinned, true, 'pinned');
  await page.getByRole('button', { name: 'Rename Workspace demo' }).click();
  await page.getByLabel('Session title').fill('Renamed demo');
  await page.getByLabel('Session title').press('Enter');
  await page.getByRole('link', { name: /Renamed demo/ }).waitFor();
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'Renamed demo', 'renamed');
  await page.getByRole('button', { name: 'Delete Renamed demo' }).click();
  await page.getByText('No sessions yet.').waitFor();
  t.equal((await app.api(`/api/sessions/${sid}`)).status, 404, 'deleted');
  t.equal(new URL(page.url()).pathname, '/', 'back to the list');

  t.same(a11y, [], 'axe-core: no serious or critical finding on these screens');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
