import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { needs } from '../helpers/needs.js';

/** Published apps (docs/solutions-and-admin.md): an app the agent wrote, served public and read-only, escapes refused. */

const chromiumPath = spawnSync('sh', ['-c', 'command -v chromium']).stdout?.toString().trim();

const INDEX = `<!doctype html><html><head><meta charset="utf-8"><title>Counter</title><link rel="stylesheet" href="style.css"></head>
<body><h1>Tally app</h1><p id="out">loading</p><button id="inc">+1</button><script src="app.js"></script></body></html>`;
const APP_JS = `let n = 0;
const out = document.getElementById('out');
fetch('data.json').then((r) => r.json()).then((d) => { n = d.start; out.textContent = 'count ' + n + ' of ' + d.items.length; });
document.getElementById('inc').addEventListener('click', () => { n += 1; out.textContent = 'count ' + n; });`;
const DATA = JSON.stringify({ start: 40, items: ['a', 'b', 'c'] });

/** A raw GET, the path sent byte for byte (fetch would normalize `..` away). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('published apps: publish, serve, content types, escapes refused, unpublish, Chromium', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app, app.adminKey, { intent: 'build a tally app' });
  model.script(
    {
      text: ['Writing the app.'],
      toolCalls: [
        { name: 'Write', args: { file_path: 'site/index.html', content: INDEX } },
        { name: 'Write', args: { file_path: 'site/app.js', content: APP_JS } },
        { name: 'Write', args: { file_path: 'site/style.css', content: 'body { font-family: sans-serif; background: #eef; } h1 { color: #235; }' } },
        { name: 'Write', args: { file_path: 'site/data.json', content: DATA } },
        { name: 'Write', args: { file_path: 'site/empty/readme.txt', content: 'no index here' } },
        { name: 'Write', args: { file_path: 'secret.txt', content: 'TOP-SECRET-OUTSIDE-THE-APP' } },
        { name: 'Write', args: { file_path: 'site/.env', content: 'TOKEN=HIDDEN-DOTFILE' } },
      ],
    },
    { text: ['The app is in site/.'] },
  );
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'build it' })).ok, true);
  await untilEnd(seen, sid, 30_000);

  const admin = (await (await app.api('/api/auth/me')).json()) as { id: string };
  const dir = join(app.config.workspaces, admin.id, sid);
  // Links planted in the app folder (as a sandboxed process could): out of the folder, out of the workspace.
  symlinkSync('../secret.txt', join(dir, 'site', 'up.txt'));
  symlinkSync('/etc/passwd', join(dir, 'site', 'passwd'));
  symlinkSync('..', join(dir, 'site', 'parent'));
  symlinkSync('/etc', join(dir, 'site', 'etc'));
  writeFileSync(join(app.home, 'outside.txt'), 'TOP-SECRET-HOME');

  const bob = await app.newUser('bob');
  const publish = (json: unknown, key = app.adminKey) => app.api('/api/published-apps', { method: 'POST', json, key });
  t.equal((await publish({ session_id: sid, working_dir: 'site' }, bob.key)).status, 404, "another user's session");
  t.equal((await publish({ session_id: sid, working_dir: 'nope' })).status, 422, 'missing folder');
  t.equal((await publish({ session_id: sid, working_dir: 'site/app.js' })).status, 422, 'a file, not a folder');
  t.equal((await publish({ session_id: sid, working_dir: '../..' })).status, 422, 'outside the workspace');
  t.equal((await publish({ session_id: sid, working_dir: 'site/etc' })).status, 422, 'outside through a link');
  t.equal((await publish({ session_id: sid, extra: 1 })).status, 422, 'unknown field');
  t.equal((await app.api('/api/published-apps')).status, 200);
  t.same((await (await app.api('/api/published-apps')).json()).items, [], 'the refused requests published nothing');

  const res = await publish({ session_id: sid, working_dir: 'site' });
  t.equal(res.status, 200);
  const pub = await res.json();
  t.match(pub, { session_id: sid, url: `${app.url}/apps/${sid}/`, working_dir: 'site' });
  t.ok(Date.parse(pub.published_at));
  t.match((await (await app.api('/api/published-apps')).json()).items, [{ session_id: sid }]);
  t.equal((await app.api(`/api/published-apps/${sid}`, { key: bob.key })).status, 404);
  t.equal((await app.api('/api/published-apps', { key: bob.key }).then((r) => r.json())).items.length, 0);

  // Served without a key, with the right content types.
  const page = await fetch(pub.url);
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(await page.text(), INDEX);
  t.match(page.headers.get('content-security-policy'), /sandbox allow-scripts/);
  t.equal(page.headers.get('x-content-type-options'), 'nosniff');
  for (const [name, type] of [
    ['app.js', 'text/javascript; charset=utf-8'],
    ['style.css', 'text/css; charset=utf-8'],
    ['data.json', 'application/json'],
    ['index.html', 'text/html; charset=utf-8'],
  ]) {
    const r = await fetch(`${pub.url}${name}`);
    t.equal(r.status, 200, name);
    t.equal(r.headers.get('content-type'), type, `${name} content type`);
  }
  const head = await fetch(`${pub.url}app.js`, { method: 'HEAD' });
  t.equal(head.status, 200, 'HEAD without a key');
  t.equal(head.headers.get('content-length'), String(Buffer.byteLength(APP_JS)));
  const bare = await fetch(`${app.url}/apps/${sid}`, { redirect: 'manual' });
  t.equal(bare.status, 308);
  t.equal(new URL(bare.headers.get('location')!, `${app.url}/apps/${sid}`).href, pub.url);
  t.equal((await rawGet(app.url, `/apps/${sid}/empty`)).status, 308, 'a folder without its slash is redirected');
  t.equal((await rawGet(app.url, `/apps/${sid}/empty/`)).status, 404, 'a folder without index.html: no listing');
  t.equal((await fetch(`${app.url}/apps/${sid}/empty/readme.txt`)).status, 200);
  t.equal((await fetch(`${app.url}/apps/sess_unknown123/`)).status, 404);

  const escapes = [
    '/../secret.txt',
    '/%2e%2e/secret.txt',
    '/%2E%2E%2Fsecret.txt',
    '/..%2fsecret.txt',
    '/..%5csecret.txt',
    '/%252e%252e/secret.txt',
    '/empty/../../secret.txt',
    '/up.txt',
    '/passwd',
    '/parent/secret.txt',
    '/etc/passwd',
    '/.env',
    '/%2eenv',
    '/empty/%00',
    '/../../../outside.txt',
    '/%2e%2e/%2e%2e/%2e%2e/outside.txt',
    '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
    '/....//secret.txt',
  ];
  const refused: string[] = [];
  for (const e of escapes) {
    const r = await rawGet(app.url, `/apps/${sid}${e}`);
    t.equal(r.status, 404, `refused: ${e}`);
    t.notMatch(r.body, /TOP-SECRET|HIDDEN-DOTFILE|root:/, `nothing outside leaks: ${e}`);
    if (r.status === 404) refused.push(e);
  }
  t.comment(`escape attempts refused with 404: ${refused.join('  ')}`);

  if (!needs(t, 'the published app in a browser', chromiumPath ? false : 'chromium is not installed')) {
    const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    t.teardown(() => browser.close());
    const p = await browser.newPage({ viewport: { width: 900, height: 500 } });
    const errors: string[] = [];
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${app.url}/apps/${sid}`);
    await p.waitForFunction(() => document.getElementById('out')?.textContent === 'count 40 of 3', null, { timeout: 10_000 });
    t.pass('the app script ran and fetched its data.json');
    await p.click('#inc');
    t.equal(await p.textContent('#out'), 'count 41', 'the app reacts to a click');
    t.equal(await p.evaluate(() => getComputedStyle(document.querySelector('h1')!).color), 'rgb(34, 51, 85)', 'its stylesheet applies');
    t.equal(await p.evaluate(() => window.origin), 'null', 'the page runs in a sandbox with an opaque origin');
    t.same(errors, [], 'no page errors');
    const shots = join(process.cwd(), 'test', 'artifacts');
    mkdirSync(shots, { recursive: true });
    await p.screenshot({ path: join(shots, 'published-app.png') });
  }

  t.equal((await app.api(`/api/published-apps/${sid}`, { method: 'DELETE', key: bob.key })).status, 404, 'bob cannot unpublish it');
  const del = await app.api(`/api/published-apps/${sid}`, { method: 'DELETE' });
  t.same(await del.json(), { session_id: sid, unpublished: true });
  t.equal((await fetch(pub.url)).status, 404, 'unpublished: gone');
  t.equal((await app.api(`/api/published-apps/${sid}`, { method: 'DELETE' })).status, 404);

  // Republished, then the session is deleted: the app goes with it.
  t.equal((await publish({ session_id: sid })).status, 200, 'the workspace root by default');
  t.equal((await fetch(`${app.url}/apps/${sid}/site/data.json`)).status, 200);
  t.equal((await fetch(`${app.url}/apps/${sid}/secret.txt`)).status, 200, 'root published: its files are public');
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.equal((await fetch(`${app.url}/apps/${sid}/site/data.json`)).status, 404);
  sock.disconnect();
});

t.test('an app serves only its folder, and the service\'s own pages cannot load it as a script', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  const admin = (await (await app.api('/api/auth/me')).json()) as { id: string };
  const dir = join(app.config.workspaces, admin.id, sid);
  mkdirSync(join(dir, 'site'), { recursive: true });
  mkdirSync(join(dir, 'other'), { recursive: true });
  writeFileSync(join(dir, 'site', 'index.html'), '<!doctype html><p>app</p>');
  writeFileSync(join(dir, 'site', 'evil.js'), 'window.__pwned = document.domain;');
  writeFileSync(join(dir, 'other', 'index.html'), 'OTHER-FOLDER');
  writeFileSync(join(dir, 'secret.txt'), 'TOP-SECRET');
  // Links that leave the app folder, even those that lead back into it.
  symlinkSync('../site', join(dir, 'site', 'loop'));
  symlinkSync('../other', join(dir, 'site', 'sibling'));
  symlinkSync(dir, join(dir, 'site', 'abs'));
  // A link in place of a folder to publish: its target is the whole workspace.
  symlinkSync('.', join(dir, 'all'));

  const publish = (json: unknown) => app.api('/api/published-apps', { method: 'POST', json });
  const viaLink = await publish({ session_id: sid, working_dir: 'all' });
  t.equal(viaLink.status, 422, 'a folder named through a link is not published (it was: the whole session)');
  t.match(await viaLink.json(), { code: 'VALIDATION_ERROR', detail: [{ loc: ['body', 'working_dir'], msg: /symbolic link/ }] });
  t.equal((await publish({ session_id: sid, working_dir: 'site' })).status, 200);

  for (const path of ['loop/index.html', 'loop/evil.js', 'sibling/index.html', 'sibling/', 'abs/secret.txt', 'abs/site/index.html']) {
    const r = await rawGet(app.url, `/apps/${sid}/${path}`);
    t.equal(r.status, 404, `a link out of the app folder: ${path}`);
    t.notMatch(r.body, /TOP-SECRET|OTHER-FOLDER/);
  }
  t.equal((await fetch(`${app.url}/apps/${sid}/`)).status, 200, 'the app itself is served');

  const js = await fetch(`${app.url}/apps/${sid}/evil.js`);
  t.equal(js.status, 200, 'no fetch metadata (curl, an old browser): served');
  t.equal(js.headers.get('x-content-type-options'), 'nosniff');
  const csp = js.headers.get('content-security-policy') ?? '';
  t.match(csp, /^sandbox allow-scripts/, 'every app response is sandboxed');
  t.notMatch(csp, /allow-same-origin/, 'never with the service\'s origin');
  // Raw requests: fetch() sets its own Sec-Fetch-Mode.
  const meta = (path: string, site: string, mode: string, dest: string) => rawGet(app.url, `/apps/${sid}/${path}`, { 'sec-fetch-site': site, 'sec-fetch-mode': mode, 'sec-fetch-dest': dest });
  for (const [site, mode, dest] of [
    ['same-origin', 'no-cors', 'script'],
    ['same-origin', 'cors', 'script'],
    ['same-origin', 'same-origin', 'worker'],
    ['same-origin', 'no-cors', 'style'],
    ['same-site', 'no-cors', 'script'],
    ['same-origin', 'cors', 'empty'],
  ]) {
    const r = await meta('evil.js', site, mode, dest);
    t.equal(r.status, 403, `refused to the service's own pages: ${site} ${mode} ${dest}`);
    t.match(r.body, /not loaded by the service's own pages/);
  }
  t.equal((await meta('evil.js', 'cross-site', 'no-cors', 'script')).status, 200, "the app's own (opaque-origin) page loads it");
  t.equal((await meta('', 'same-origin', 'navigate', 'document')).status, 200, 'a link from the console opens it');
  t.equal((await meta('', 'same-origin', 'navigate', 'iframe')).status, 200, 'so does a frame (sandboxed by its CSP)');

  if (needs(t, 'the script load in a browser (the header checks above hold)', chromiumPath ? false : 'chromium is not installed')) return;
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  t.teardown(() => browser.close());
  const p = await browser.newPage();
  await p.goto(`${app.url}/`);
  const outcome = await p.evaluate(
    (src) =>
      new Promise<{ event: string; pwned: unknown }>((resolve) => {
        const s = document.createElement('script');
        s.src = src;
        s.onload = () => resolve({ event: 'load', pwned: (window as unknown as { __pwned?: unknown }).__pwned });
        s.onerror = () => resolve({ event: 'error', pwned: (window as unknown as { __pwned?: unknown }).__pwned });
        document.head.appendChild(s);
      }),
    `/apps/${sid}/evil.js`,
  );
  t.same(outcome, { event: 'error', pwned: undefined }, 'a console page\'s <script src="/apps/..."> does not run');
  const app2 = await browser.newPage();
  await app2.goto(`${app.url}/apps/${sid}/`);
  t.equal(await app2.evaluate(() => window.origin), 'null', 'the app itself opens, with an opaque origin');
});
