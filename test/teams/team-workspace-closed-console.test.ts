import t from 'tap';
import { buildWithModel, record, subscribe, untilEnd } from '../helpers/chat.js';
import { teamWorkspaceSession } from '../helpers/team-workspace.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { launch, open, shot } from '../console/browser.js';

/**
 * docs/identity.md "When read access goes", in the console (headless Chromium, the real service): a
 * member reading a teammate's session is removed from the team workspace; the page says in words
 * that the session can no longer be read where the read-only notice was, and the owner's next chat
 * does not show up there.
 */

t.setTimeout(60_000);

const CLOSED = 'You can no longer read this session (session not found): it was deleted, or you are no longer a member of its team workspace.';

t.test('console: a reader removed from the team workspace gets a notice, and the chat stops following', async (t) => {
  const { app, model } = await buildWithModel(t);
  const [alice, bob] = await Promise.all(['alice', 'bob'].map((n) => app.newUser(n)));
  const { ws, sid } = await teamWorkspaceSession(app, alice, [bob], 'Rotate the keys');
  const sock = app.socket(alice.key);
  const seen = record(sock);
  await waitFor(() => sock.connected, { what: "alice's socket" });
  await subscribe(sock, sid);
  model.script({ text: ['The keys ', 'are rotated.'] });
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'rotate the keys' }), { ok: true });
  await untilEnd(seen, sid);

  const browser = await launch(t);
  if (!browser) return;
  const { page, problems } = await open(browser, `${app.url}/`);
  await page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), bob.key);
  await page.goto(`${app.url}/sessions/${sid}`);
  await page.getByText('The keys are rotated.').waitFor();
  await page.getByRole('note').filter({ hasText: 'only its owner can send messages' }).waitFor();

  t.equal((await app.api(`/api/prod_workspaces/${ws}/members/${bob.userId}`, { method: 'DELETE', key: alice.key })).status, 200, 'alice removes bob');
  const notice = page.locator('p.read-only[role="status"]');
  await notice.waitFor();
  t.equal(await notice.textContent(), CLOSED, 'the notice, in words');
  t.equal(await page.getByRole('note').count(), 0, 'it took the place of the read-only note');
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, 'no message box');

  // The owner's next chat, drawn in her own tab: by then bob's page would have drawn it too.
  const aliceTab = await open(browser, `${app.url}/`);
  await aliceTab.page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), alice.key);
  await aliceTab.page.goto(`${app.url}/sessions/${sid}`);
  await aliceTab.page.getByText('The keys are rotated.').waitFor();
  model.script({ text: ['Bob ', 'must not see this.'] });
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'and now' }), { ok: true });
  await untilEnd(seen, sid, 20_000, 2);
  await aliceTab.page.getByText('Bob must not see this.').waitFor();
  t.equal(await page.getByText('Bob must not see this.').count(), 0, "the owner's next chat does not reach bob's page");
  t.equal(await page.getByText('and now').count(), 0);
  t.notMatch((await page.locator('body').textContent()) ?? '', /"session_id"|\{"code"/, 'no raw JSON on the page');
  await shot(page, '47-reader-removed');
  t.same([...problems, ...aliceTab.problems], [], 'no CSP violation or page error');
});
