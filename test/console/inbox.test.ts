import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { axe, launch, open, shot } from './browser.js';

/**
 * The inbox in the web console, in headless Chromium against the real service (docs/inbox.md):
 * the header counts what waits, the Inbox page lists an approval and a question from two
 * sessions, and each is answered in place; the count follows.
 */

const POLICY = JSON.stringify({ default: 'allow', rules: [{ tool: 'Echo', pattern: '*secret*', action: 'ask', timeout_seconds: 3600 }] });

t.test('console: the inbox count in the header, the page, an approval and a question answered in place', { timeout: 180_000 }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const s1 = await createSession(app, app.adminKey, { intent: 'Deploy the site' });
  let w = await watch(app, s1);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'the secret deploy' } }] });
  await request(w.sock, 'chat:send', { session_id: s1, message: 'go' });
  await untilEnd(w.seen, s1);
  const s2 = await createSession(app, app.adminKey, { intent: 'Pick a branch' });
  w = await watch(app, s2);
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which branch?', options: [{ label: 'main' }, { label: 'dev' }] }] } }] });
  await request(w.sock, 'chat:send', { session_id: s2, message: 'go' });
  await untilEnd(w.seen, s2);

  const browser = await launch(t);
  if (!browser) return;
  const { page, problems } = await open(browser, `${app.url}/`);
  await page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), app.adminKey);
  await page.goto(`${app.url}/`);
  const nav = page.getByRole('navigation', { name: 'Pages' });
  const link = nav.getByRole('link', { name: /^Inbox/ });
  await nav.getByRole('link', { name: 'Inbox 2 waiting' }).waitFor();
  t.equal(await link.locator('.count').textContent(), '2', 'the header counts 2');
  await link.click();
  await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  const items = page.locator('.inbox-item');
  await items.nth(1).waitFor();
  t.equal(await items.count(), 2);
  t.match(await items.nth(0).textContent(), /^Approval Deploy the site asked \d+ s ago · denied by itself at .*The agent wants to run Echo\./);
  t.match(await items.nth(1).textContent(), /^Question Pick a branch asked \d+ s ago.*Which branch\?/);
  await shot(page, '70-inbox-desktop');
  t.same(await axe(page), [], 'no serious accessibility finding on the inbox');

  model.script({ text: ['deployed'] });
  await items.nth(0).getByRole('button', { name: 'Allow once' }).click();
  await nav.getByRole('link', { name: 'Inbox 1 waiting' }).waitFor();
  await waitFor(() => ran.length === 1, { what: 'the approved call ran' });
  t.same(ran, ['the secret deploy']);
  await waitFor(async () => (await items.count()) === 1, { what: 'the answered approval left the page' });
  t.match(await items.nth(0).textContent(), /^Question Pick a branch/, 'the question is left');

  model.script({ text: ['on dev'] });
  await items.nth(0).getByRole('button', { name: 'dev' }).click();
  await items.nth(0).getByRole('button', { name: 'Answer' }).click();
  await page.getByText('Nothing waits for you.').waitFor();
  await nav.getByRole('link', { name: 'Inbox', exact: true }).waitFor();
  t.equal((await link.textContent())?.trim(), 'Inbox', 'no count when nothing waits');
  await shot(page, '71-inbox-empty');
  await waitFor(async () => (await (await app.api(`/api/sessions/${s2}`)).json()).status === 'completed', { what: 'the answered session went on' });
  const msgs = await (await app.api(`/api/sessions/${s2}/messages`)).json();
  t.match(msgs[1].tool_calls[0], { status: 'done', result: /dev/ });
  t.same(problems, [], 'no CSP violation or page error');
});
