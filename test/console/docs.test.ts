import t from 'tap';
import { build } from '../helpers/app.js';
import { axe, launch, open, PHONE, shot } from './browser.js';

/**
 * The API reference at /api/docs (issue 33): the shipped OpenAPI document as one page grouped by
 * the interface's areas, every operation with an example request and response, public, offline (nothing
 * from another origin), under the console's CSP, and one click from the console.
 */

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

t.test('docs page: every operation, by area, with examples, offline', { timeout: 180_000 }, async (t) => {
  const app = await build(t);
  const res = await fetch(`${app.url}/api/docs`);
  t.equal(res.status, 200, 'public: no key');
  t.match(res.headers.get('content-security-policy'), /default-src 'none'.*script-src 'self'/, 'under the console CSP');
  t.notMatch(await res.text(), /<script(?![^>]*\bsrc=)[^>]*>|(src|href)="(https?:)?\/\//, 'no inline script, nothing from elsewhere');
  const doc = await (await fetch(`${app.url}/api/openapi.json`)).json();
  const ids: string[] = Object.values(doc.paths).flatMap((item: any) => METHODS.filter((m) => item[m]).map((m) => item[m].operationId));

  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`);
  const elsewhere: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(app.url) && !r.url().startsWith('data:')) elsewhere.push(r.url());
  });
  // Reached from the console's header.
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByLabel('API key').press('Enter');
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'API docs' }).click();
  await page.getByRole('heading', { name: 'REST API reference' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/api/docs');

  const areas = await page.getByRole('navigation', { name: 'Areas' }).getByRole('link').allTextContents();
  t.same(areas.slice(0, 5), ['Health, config, identity', 'Sessions', 'Workspace files of a session', 'Sharing, export, import, tokenize', 'Background tasks and session skills'], 'areas in their documented order');
  t.ok(areas.includes('Admin and production users') && areas.includes('Workspaces and issues') && areas.at(-1) === 'Errors', `${areas.length} areas: ${areas.join(' | ')}`);
  const shownIds = await page.locator('details.op').evaluateAll((els) => els.map((e) => e.id));
  t.same([...shownIds].sort(), [...ids].sort(), `all ${ids.length} operations of the document, each once`);
  const inArea = async (area: string, id: string) => page.locator(`section:has(h2:text-is("${area}")) details.op#${id}`).count();
  t.equal(await inArea('Workspace files of a session', 'put_sessions_by_session_id_files_by_file_path'), 1, 'a file route under its area');
  t.equal(await inArea('API keys', 'post_user_api_keys'), 1, 'key creation under API keys');
  t.equal(await page.locator('details.op pre').count(), ids.length * 2, 'a request and a response example for every operation');

  // A public route: marked, and its example sends no key.
  const health = page.locator('details.op#get_health');
  t.equal(await health.locator('.badge.public').count(), 1, 'public routes say so (no lock)');
  await health.locator('summary').click();
  t.notMatch(await health.locator('pre').first().textContent(), /Authorization/, 'its example sends no key');

  // A key route: opened by keyboard; its example request works against the service as shown.
  const create = page.locator('details.op#post_user_api_keys');
  await create.locator('summary').focus();
  await page.keyboard.press('Enter');
  const request = (await create.locator('pre').first().textContent()) ?? '';
  t.match(request, /^POST \/api\/user\/api-keys\/\nAuthorization: Bearer sk-agentsvc-v2-…\nContent-Type: application\/json\n\n\{/, 'method, path, key and body');
  const body = JSON.parse(request.slice(request.indexOf('\n\n') + 2));
  const sent = await app.api('/api/user/api-keys/', { method: 'POST', json: body });
  t.equal(sent.status, 201, `the example body is accepted: ${JSON.stringify(body)}`);
  const response = (await create.locator('pre').nth(1).textContent()) ?? '';
  t.match(response, /^HTTP 201/, 'the documented status');
  const got = await sent.json();
  const shown = JSON.parse(response.slice(response.indexOf('\n\n') + 2));
  t.same(Object.keys(shown).sort(), Object.keys(got).sort(), 'the example response has the fields the service answers');
  await shot(page, '30-docs-desktop');
  const a11y = (await axe(page)).map((v) => `docs: ${v}`);

  // The filter narrows to matching operations.
  await page.getByLabel('Filter operations').fill('api-keys');
  t.equal(await page.locator('details.op').count(), 5, 'filtering by path: the five key operations');
  await page.getByLabel('Filter operations').fill('');

  await page.setViewportSize(PHONE);
  await shot(page, '30-docs-phone');
  a11y.push(...(await axe(page)).map((v) => `docs (phone): ${v}`));
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 1, `no sideways scrolling at 390 px (${overflow})`);
  await page.getByRole('link', { name: 'agentsvc' }).click();
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/', 'and back to the console');

  const dark = await open(browser, `${app.url}/api/docs#post_sessions`, { colorScheme: 'dark' });
  await dark.page.getByRole('heading', { name: 'REST API reference' }).waitFor();
  t.equal(await dark.page.locator('details.op#post_sessions').getAttribute('open'), '', 'a link to an operation opens it');
  await dark.page.locator('details.op#post_sessions').scrollIntoViewIfNeeded();
  await shot(dark.page, '30-docs-dark-desktop');
  a11y.push(...(await axe(dark.page)).map((v) => `docs (dark): ${v}`));
  await dark.context.close();

  t.same(elsewhere, [], 'nothing was fetched from another origin (works offline)');
  t.same(a11y, [], 'axe-core: no serious or critical finding');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
