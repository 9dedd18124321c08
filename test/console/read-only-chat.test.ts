import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { axe, launch, open, shot } from './browser.js';

/**
 * A team workspace's session read in the console by someone who may not change it
 * (docs/identity.md "Reading without changing"), in headless Chromium against the real service: a
 * viewer sees the conversation live, a read-only notice where the message box would be, no Stop
 * and no answer buttons for a pending question; a member reading a teammate's session likewise.
 * Before, the viewer got the send box, which failed on use, and a teammate's session was a 404.
 */

t.setTimeout(120_000);

const VIEWER_NOTE = 'You can read this session; your role cannot send messages.';
const TEAMMATE_NOTE = 'You can read this session; only its owner can send messages.';

t.test("console: a viewer and a teammate read a team session live, without the owner's controls", async (t) => {
  const { app, model } = await buildWithModel(t);
  const [alice, bob, carol] = await Promise.all(['alice', 'bob', 'carol'].map((n) => app.newUser(n)));
  t.equal((await app.api(`/api/admin/users/${carol.userId}`, { method: 'PATCH', json: { role: 'viewer' } })).status, 200);
  const ws = (await (await app.api('/api/prod_workspaces', { method: 'POST', key: alice.key, json: { name: 'Infra' } })).json()).id as string;
  for (const u of [bob, carol]) t.equal((await app.api(`/api/prod_workspaces/${ws}/members`, { method: 'POST', key: alice.key, json: { user_id: u.userId } })).status, 200);
  const sid = await createSession(app, alice.key, { intent: 'Rotate the keys', workspace_id: ws });
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
  await page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), carol.key);
  await page.goto(`${app.url}/`);
  // The viewer has no session of their own: the team's are listed under its workspace's name.
  const team = page.getByRole('region', { name: 'Team workspaces' });
  await team.getByRole('heading', { name: 'Infra' }).waitFor();
  t.equal(await page.getByRole('form', { name: 'New session' }).count(), 0, 'no new session form for a viewer');
  await page.getByRole('heading', { name: 'Nothing open' }).waitFor();
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, 'no first-message composer on the home page');
  await team.getByRole('link', { name: /^Rotate the keys/ }).click();
  await page.waitForURL(`${app.url}/sessions/${sid}`);
  await page.getByText('The keys are rotated.').waitFor();
  const note = page.getByRole('note');
  await note.waitFor();
  t.equal(await note.textContent(), VIEWER_NOTE, 'the read-only notice where the message box would be');
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, 'no message box');
  t.equal(await page.getByRole('button', { name: 'Send' }).count(), 0, 'no Send');
  t.same(await page.getByRole('navigation', { name: 'Session', exact: true }).getByRole('link').allTextContents(), ['Chat', 'Files'], 'no Checkpoints, Share or Policy tab');

  // Live: alice's next chat asks a question; the viewer sees it, without Stop or the answer buttons.
  model.script({
    delayMs: 400,
    text: ['Checking ', 'the vault ', 'first.'],
    toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which vault?', header: 'Vault', options: [{ label: 'Prod' }, { label: 'Staging' }] }] } }],
  });
  t.match(await request(sock, 'chat:send', { session_id: sid, message: 'and the vault' }), { ok: true });
  await page.locator('.turns[aria-busy="true"]').waitFor();
  t.equal(await page.getByRole('button', { name: /^Stop/ }).count(), 0, 'no Stop while the run goes on');
  await page.getByText("Waiting for the session's owner to answer this question.").waitFor();
  t.equal(await page.getByRole('button', { name: 'Prod' }).count(), 0, 'no answer buttons');
  t.equal(await page.getByLabel('Message', { exact: true }).count(), 0, 'still no message box');
  await shot(page, '45-viewer-read-only');
  t.same(await axe(page), [], 'axe: no serious or critical finding');

  await page.getByRole('link', { name: 'Files' }).click();
  await page.getByRole('navigation', { name: 'Session', exact: true }).waitFor();
  t.equal(await page.getByText('Upload files').count(), 0, 'no upload in Files');

  // A member reading a teammate's session: the same, with the teammate's notice.
  const bobTab = await open(browser, `${app.url}/`);
  await bobTab.page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), bob.key);
  await bobTab.page.goto(`${app.url}/sessions/${sid}`);
  await bobTab.page.getByText('The keys are rotated.').waitFor();
  await bobTab.page.getByRole('note').filter({ hasText: TEAMMATE_NOTE }).waitFor();
  t.equal(await bobTab.page.getByLabel('Message', { exact: true }).count(), 0, "no message box in a teammate's session");
  t.equal(await bobTab.page.getByRole('button', { name: 'Prod' }).count(), 0, 'no answer buttons');
  t.equal(await bobTab.page.locator('article.turn.user[aria-label^="Owner"]').count(), 2, "the owner's messages are not bob's");
  await bobTab.page.getByRole('region', { name: 'Team workspaces' }).getByRole('link', { name: /^Rotate the keys/ }).waitFor();
  await shot(bobTab.page, '46-teammate-read-only');

  // The owner still has every control.
  const aliceTab = await open(browser, `${app.url}/`);
  await aliceTab.page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), alice.key);
  await aliceTab.page.goto(`${app.url}/sessions/${sid}`);
  await aliceTab.page.getByRole('button', { name: 'Prod' }).waitFor();
  t.equal(await aliceTab.page.getByRole('note').count(), 0, 'no read-only notice for the owner');
  t.equal(await aliceTab.page.getByLabel('Message', { exact: true }).count(), 1);

  t.same([...problems, ...bobTab.problems, ...aliceTab.problems], [], 'no CSP violation or page error');
});
