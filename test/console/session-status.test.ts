import t from 'tap';
import type { Page } from 'playwright-core';
import { buildWithModel, createSession, echoTool } from '../helpers/chat.js';
import { launch, open, sendMessage, shot, signIn } from './browser.js';

/**
 * A session's status in the chat's header and in the sidebar comes from one store fed by the same
 * events (web/src/session-status.tsx, docs/console.md "Session status"): whatever ends a run (the
 * model failing, Esc, a run limit, a pause for an approval), the sidebar's entry changes in the
 * same render as the header. Before, the sidebar read the list again 200 ms after the header read
 * the session, so a failed run stayed "running" in the sidebar while the header said "failed";
 * another tab of the same browser never heard of the run at all (now it hears it at once; another
 * browser reads the list again when its tab comes back into view).
 *
 * How "the same render" is checked: a MutationObserver in the page notes the pair (header,
 * sidebar entry of the open session) after every DOM change; every pair noted must agree.
 */

const lastUser = (body: any): string => {
  const m = [...body.messages].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
};

let calls = 0;
function script(body: any) {
  const said = lastUser(body);
  const afterTool = body.messages.at(-1)?.role === 'tool';
  if (said.includes('fail please')) return { status: 400 };
  if (said.includes('long run')) return { delayMs: 100, text: Array.from({ length: 60 }, () => 'word ') };
  // A model that would call tools for ever (other arguments each time, so no loop): the run limit ends it.
  if (said.includes('tools please')) return { toolCalls: [{ name: 'Echo', args: { say: `n${++calls}` } }] };
  if (said.includes('deploy please')) return afterTool ? { text: ['Deployed.'] } : { toolCalls: [{ name: 'Deploy', args: { say: 'prod' } }] };
  return { text: [`echo: ${said}`] };
}

/** What watchPairs keeps on the page's window. */
type Recorder = { __pairs: [string, string][]; __observer?: MutationObserver };

/** Start noting (header, sidebar) pairs of the open session after every change of the page. */
const watchPairs = (page: Page) =>
  page.evaluate(() => {
    const w = window as unknown as Recorder;
    w.__pairs = [];
    w.__observer?.disconnect();
    const note = () => {
      const head = document.querySelector('.session-head .status')?.textContent;
      const side = document.querySelector('nav.side a[aria-current="page"] .status')?.textContent;
      if (head && side) w.__pairs.push([head, side]);
    };
    w.__observer = new MutationObserver(note);
    w.__observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
const pairs = (page: Page): Promise<[string, string][]> => page.evaluate(() => (window as unknown as Recorder).__pairs);

/** Both show `status`; answers every pair noted since watchPairs. */
async function settle(page: Page, status: string) {
  await page.waitForFunction(
    (s) => document.querySelector('.session-head .status')?.textContent === s && document.querySelector('nav.side a[aria-current="page"] .status')?.textContent === s,
    status,
    { timeout: 20_000 },
  );
  return pairs(page);
}

const disagree = (p: [string, string][]) => p.filter(([head, side]) => head !== side);

t.test('console: the sidebar shows a run ending in the same render as the header, in every way a run ends', { timeout: 120_000 }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RUN_MAX_TOOL_CALLS: '2' });
  model.fallback = script;
  app.service.tools.register(echoTool());
  app.service.tools.register({ ...echoTool(), name: 'Deploy', description: 'deploy' });
  app.service.hooks.gate('tool.before', ({ tool }) =>
    tool.name === 'Deploy'
      ? { action: 'ask', question: { tool_name: 'Deploy', arguments: { say: 'prod' }, rule: { tool: 'Deploy', action: 'ask' }, source: 'install', options: ['Allow once', 'Allow for this session', 'Deny'] } }
      : undefined,
  );
  const ids: Record<string, string> = {};
  for (const name of ['Other browser', 'Other tab', 'Approval', 'Limit', 'Stopped', 'Fails']) ids[name] = await createSession(app, app.adminKey, { intent: name });
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`);
  await signIn(page, app.adminKey);
  const openSession = async (name: string) => {
    await page.getByRole('navigation', { name: 'Sessions' }).getByRole('link', { name: new RegExp(`^${name}`) }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
    await page.getByText('No messages yet.').waitFor();
    await page.locator('.session-head .status').waitFor();
    await watchPairs(page);
  };

  // The model fails: both say "failed" in the same render.
  await openSession('Fails');
  await sendMessage(page, 'fail please');
  let seen = await settle(page, 'failed');
  t.same(disagree(seen), [], 'a failed run: the sidebar never lags the header');
  t.ok(seen.some(([head]) => head === 'failed'), 'the change was watched');
  await shot(page, '90-status-failed-desktop');

  // Stopped by the person (Esc).
  await openSession('Stopped');
  await sendMessage(page, 'long run');
  await settle(page, 'running');
  await page.keyboard.press('Escape');
  seen = await settle(page, 'interrupted');
  t.same(disagree(seen), [], 'a stopped run: the same in both');
  t.ok(seen.some(([head]) => head === 'running'), 'running was shown in both first');

  // Cut by the run limit (the third tool call is past AGENTSVC_RUN_MAX_TOOL_CALLS=2): the session
  // is completed, the chat says why.
  await openSession('Limit');
  await sendMessage(page, 'tools please');
  seen = await settle(page, 'completed');
  t.same(disagree(seen), [], 'a run cut by a limit: the same in both');
  await page.getByRole('alert').filter({ hasText: /past its 2/ }).waitFor();

  // Paused for an approval: both say it waits; answered, it runs and completes.
  await openSession('Approval');
  await sendMessage(page, 'deploy please');
  seen = await settle(page, 'waiting for input');
  t.same(disagree(seen), [], 'a paused run: the sidebar shows it waits, with the header');
  await shot(page, '91-status-waiting-desktop');
  await page.getByRole('region', { name: 'Approval: Deploy' }).getByRole('button', { name: 'Allow once' }).click();
  await page.getByText('Deployed.').waitFor();
  seen = await settle(page, 'completed');
  t.same(disagree(seen), [], 'answered: the same in both until it completed');

  // Another tab of this browser, signed in as the same user, on another page: its sidebar follows
  // the run this tab makes, as it happens (it is not subscribed to the session).
  const other = await context.newPage();
  await other.goto(`${app.url}/`);
  await signIn(other, app.adminKey);
  const entry = other.getByRole('navigation', { name: 'Sessions' }).getByRole('link', { name: /^Other tab/ }).locator('.status');
  t.equal(await entry.textContent(), 'created');
  await openSession('Other tab');
  await sendMessage(page, 'long run');
  await settle(page, 'running');
  await other.waitForFunction((el) => el?.textContent === 'running', await entry.elementHandle(), { timeout: 5_000 });
  await page.keyboard.press('Escape');
  await settle(page, 'interrupted');
  await other.waitForFunction((el) => el?.textContent === 'interrupted', await entry.elementHandle(), { timeout: 5_000 });
  t.pass('the other tab showed running, then interrupted');
  await shot(other, '92-status-other-tab-desktop');

  // Another browser (its own storage, no channel to this one): it reads the list again when its
  // tab comes back into view.
  const elsewhere = await open(browser, `${app.url}/`);
  await signIn(elsewhere.page, app.adminKey);
  const far = elsewhere.page.getByRole('navigation', { name: 'Sessions' }).getByRole('link', { name: /^Other browser/ }).locator('.status');
  t.equal(await far.textContent(), 'created');
  await openSession('Other browser');
  await sendMessage(page, 'fail please');
  await settle(page, 'failed');
  await elsewhere.page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
  await elsewhere.page.waitForFunction((el) => el?.textContent === 'failed', await far.elementHandle(), { timeout: 5_000 });
  t.pass('the other browser showed the failure once its tab was in view again');

  t.same([...problems, ...elsewhere.problems], [], 'no CSP violation, no page error');
  await elsewhere.context.close();
  await context.close();
});
