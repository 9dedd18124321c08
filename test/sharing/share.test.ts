import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { needs } from '../helpers/needs.js';

/** Share links and the share page (docs/sharing-and-portability.md), the page checked in a real headless Chromium. */

const chromiumPath = spawnSync('sh', ['-c', 'command -v chromium']).stdout?.toString().trim();

function script(body: any) {
  const sys = String(body.messages[0].content);
  if (sys.startsWith('You are a sub-agent')) return { text: ['Sub-agent found 3 files.'] };
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['All **done**: the report is in `report.md`. <script>alert(1)</script>'] };
  return {
    reasoning: ['Let me think ', 'about the files.'],
    text: ['I will write the report and ask a helper.'],
    toolCalls: [
      { name: 'Write', args: { file_path: 'report.md', content: '# Report\nAll good.\n' } },
      { name: 'Agent', args: { description: 'count files', prompt: 'Count the files' } },
    ],
  };
}

t.test('share links: create, read without a key, page, revoke, expiry, bounds, secrets', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = script;
  const sid = await createSession(app, app.adminKey, { intent: 'Quarterly report', env: { DEPLOY_TOKEN: 'tok-98765-secret' } });
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'Write the report; my token is tok-98765-secret' })).ok, true);
  await untilEnd(seen, sid, 30_000);

  const post = (json: unknown, s = sid) => app.api(`/api/sessions/${s}/share`, { method: 'POST', json });
  t.equal((await post({ ttl_seconds: 59 })).status, 422, 'ttl below 60');
  t.equal((await post({ ttl_seconds: 31_536_001 })).status, 422, 'ttl over a year');
  const res = await post({});
  t.equal(res.status, 200);
  const link = await res.json();
  t.match(link, { token: /^share_[A-Za-z0-9]{32}$/, url: `${app.url}/share/${link.token}` });
  t.ok(Math.abs(Date.parse(link.expires_at) - Date.now() - 604_800_000) < 60_000, 'default ttl: 7 days');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).shared, true);
  const stored = await app.service.db.em().getConnection().execute(`select token_hash from share_links`);
  t.notOk(JSON.stringify(stored).includes(link.token), 'only the hash is stored');

  const api = await app.api(`/api/share/${link.token}`, { key: null });
  t.equal(api.status, 200);
  t.equal(api.headers.get('cache-control'), 'no-store');
  const shared = await api.json();
  t.equal(shared.intent, 'Quarterly report');
  t.same(shared.turns.map((x: any) => x.turn_id), ((await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[]).map((x) => x.turn_id), 'the active branch, as the owner sees it');
  t.notOk(JSON.stringify(shared).includes('tok-98765-secret'), 'the session env value never leaves');
  t.ok(JSON.stringify(shared).includes('****'));

  const page = await fetch(link.url);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  t.equal(page.headers.get('cache-control'), 'no-store');
  t.match(page.headers.get('x-robots-tag'), /noindex/);
  const html = await page.text();
  t.notMatch(html, /<script/i, 'no script, and the model text <script> is escaped');
  t.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  t.notOk(html.includes('tok-98765-secret'));

  if (!needs(t, 'the share page in a browser', chromiumPath ? false : 'chromium is not installed')) {
    const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    t.teardown(() => browser.close());
    const shots = join(process.cwd(), 'test', 'artifacts');
    mkdirSync(shots, { recursive: true });
    for (const [name, viewport] of [
      ['desktop', { width: 1280, height: 900 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const p = await browser.newPage({ viewport, javaScriptEnabled: false });
      const r = await p.goto(link.url);
      t.equal(r?.status(), 200, `${name}: 200`);
      t.equal(await p.title(), 'Quarterly report');
      const textContent = (await p.locator('main').textContent()) ?? '';
      t.match(textContent, /Write the report/, `${name}: the user message`);
      t.match(textContent, /All done: the report is in report\.md/, `${name}: the answer, its markdown rendered`);
      t.equal(await p.locator('details.tool').count(), 2, `${name}: both tool calls, folded`);
      t.equal(await p.locator('details.thinking').count(), 1, `${name}: thinking folded`);
      t.equal(await p.locator('details.tool .sub .turn').count(), 1, `${name}: the sub-agent turn nested under its call`);
      const overflow = await p.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth').catch(() => 0);
      t.ok(Number(overflow) <= 1, `${name}: no horizontal scrolling (${overflow}px)`);
      await p.locator('details.tool').first().locator('summary').click();
      await p.screenshot({ path: join(shots, `share-${name}.png`), fullPage: true });
      await p.close();
    }
    t.equal((await app.api(`/api/sessions/${sid}/share/${link.token}`, { method: 'DELETE' })).status, 200);
    const gone = await browser.newPage({ javaScriptEnabled: false });
    const r = await gone.goto(link.url);
    t.equal(r?.status(), 404, 'revoked: 404 page');
    t.match((await gone.locator('h1').textContent()) ?? '', /not available/);
    await gone.screenshot({ path: join(shots, 'share-revoked.png') });
    await gone.close();
  }

  t.equal((await app.api(`/api/share/${link.token}`, { key: null })).status, 404, 'revoked');
  t.equal((await app.api(`/api/sessions/${sid}/share/${link.token}`, { method: 'DELETE' })).status, 404, 'already revoked');
  const l2 = await (await post({ ttl_seconds: 60 })).json();
  await app.service.db.em().getConnection().execute(`update share_links set expires_at = now() - interval '1 second' where session_id = ? and revoked_at is null`, [sid]);
  t.equal((await app.api(`/api/share/${l2.token}`, { key: null })).status, 404, 'expired');
  const l3 = await (await post({})).json();
  const l4 = await (await post({})).json();
  await app.api(`/api/sessions/${sid}/sharing`, { method: 'PATCH', json: { shared: false } });
  for (const l of [l3, l4]) t.equal((await app.api(`/api/share/${l.token}`, { key: null })).status, 404, 'sharing off revokes every link');
  const bob = await app.newUser('bob');
  t.equal((await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {}, key: bob.key })).status, 404, "another user's session");
  const l5 = await (await post({})).json();
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.equal((await app.api(`/api/share/${l5.token}`, { key: null })).status, 404, 'deleting the session revokes its links');
  t.equal((await app.api('/api/share/share_nope', { key: null })).status, 404);
  t.equal((await fetch(`${app.url}/share/${'x'.repeat(40)}`)).status, 404);
  sock.disconnect();
});

t.test('with public sharing off: 403 to share, 404 for every link', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_PUBLIC_SHARING: 'false' });
  const sid = await createSession(app);
  const r = await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {} });
  t.equal(r.status, 403);
  t.equal((await r.json()).code, 'SHARING_DISABLED');
  t.equal((await app.api(`/api/share/share_${'a'.repeat(32)}`, { key: null })).status, 404);
});
