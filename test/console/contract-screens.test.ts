import { waitFor } from '../helpers/wait.js';
import t from 'tap';
import type { Page, Route } from 'playwright-core';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { axe, launch, open, PHONE, shot } from './browser.js';

/**
 * Screens built against docs/policy.md and docs/models-and-usage.md while the service gains their routes:
 * usage and budgets, audit, a session's policy, and approvals in the chat. On this service the
 * routes answer 404 and each screen says the feature is not available here; then the browser is
 * given contract-shaped answers (Playwright's request routing) to check what the screens draw and
 * what they send. The approval is the real thing: a policy gate of the run engine holds a call and
 * the chat answers it with `chat:send askuser_answer` as docs/policy.md words it.
 */

const json = (route: Route, body: unknown) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });

async function signIn(page: Page, key: string) {
  await page.getByLabel('API key').fill(key);
  await page.getByLabel('API key').press('Enter');
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
}

t.test('console: usage, budgets, audit, policy and approvals', { timeout: 240_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) => {
    if (body.messages.at(-1)?.role === 'tool') return { text: ['Done.'] };
    return { toolCalls: [{ name: 'Write', args: { file_path: 'deploy.sh', content: 'git push origin main\n' } }] };
  };
  const rule = { tool: 'Write', pattern: '*.sh', action: 'ask' };
  app.service.hooks.gate('tool.before', ({ tool }) =>
    tool.name === 'Write' ? { action: 'ask', question: { tool_name: 'Write', arguments: { file_path: 'deploy.sh' }, rule, source: 'install', options: ['Allow once', 'Allow for this session', 'Deny'] } } : undefined,
  );
  const sid = await createSession(app, app.adminKey, { intent: 'Policy demo' });
  const browser = await launch(t);
  if (!browser) return;
  const a11y: string[] = [];
  const { page, problems, context } = await open(browser, `${app.url}/`);
  await signIn(page, app.adminKey);
  const unavailable = (what: string) => page.getByRole('status').filter({ hasText: `${what}: not available on this server.` });

  // A server without these routes (an older agentsvc) answers 404: each screen says so, nothing
  // breaks. This one has them (200), so the 404s come from the browser's request routing.
  t.equal((await app.api('/api/usage')).status, 200, 'this server has the usage route');
  const missing = /\/api\/(usage|budgets|audit|sessions\/[^/]+\/policy)(\?|$)/;
  await context.route(missing, (route) => route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ detail: 'not found', code: 'NOT_FOUND' }) }));
  await page.goto(`${app.url}/usage`);
  await unavailable('Budgets').waitFor();
  await unavailable('Usage').waitFor();
  await shot(page, '40-usage-unavailable-desktop');
  a11y.push(...(await axe(page)).map((v) => `usage (404): ${v}`));
  await page.goto(`${app.url}/audit`);
  await unavailable('The audit of tool decisions').waitFor();
  await page.goto(`${app.url}/sessions/${sid}/policy`);
  await unavailable('Tool policy').waitFor();
  await shot(page, '41-policy-unavailable-desktop');
  t.equal(await page.getByRole('alert').count(), 0, 'a missing feature is not shown as an error');

  // The same screens against contract-shaped answers.
  await context.unroute(missing);
  const asked: { url: URL; method: string; body: unknown }[] = [];
  await context.route(/\/api\/(usage|budgets|audit|sessions\/[^/]+\/policy)(\?|$)/, (route) => {
    const req = route.request();
    const url = new URL(req.url());
    asked.push({ url, method: req.method(), body: req.postDataJSON() });
    if (url.pathname === '/api/usage')
      return json(route, {
        items: [{ key: url.searchParams.get('group_by') === 'model' ? 'gpt-4o-mini' : '2026-11-25', calls: 3, input_tokens: 1200, output_tokens: 300, cost: 0.0123 }],
        total: { calls: 3, input_tokens: 1200, output_tokens: 300, cost: 0.0123 },
      });
    if (url.pathname === '/api/budgets')
      return json(route, {
        budgets: [
          { scope: 'user', period: 'day', max_tokens: 10000, max_cost: null, used_tokens: 8200, used_cost: null, resets_at: '2026-11-26T00:00:00.000Z' },
          { scope: 'install', period: 'month', max_tokens: null, max_cost: 50, used_tokens: 99000, used_cost: 50, resets_at: '2026-12-01T00:00:00.000Z' },
        ],
      });
    if (url.pathname === '/api/audit')
      return json(route, {
        items: [{ id: 'aud_1', at: '2026-11-25T10:00:00.000Z', user_id: 'user_a', session_id: sid, tool_call_id: 'call_1', tool_name: 'Bash', arguments: { command: 'curl x | sh' }, action: 'denied', rule: { tool: 'Bash', pattern: 'curl*', action: 'deny' }, source: 'install', decided_by: 'policy' }],
        total: 1,
      });
    if (req.method() === 'PUT') return json(route, { ok: true });
    return json(route, { rules: [{ tool: 'Bash', pattern: 'git push*', action: 'ask', source: 'install' }, { tool: 'WebFetch', action: 'deny', source: 'session' }] });
  });
  await page.goto(`${app.url}/usage`);
  const row = page.getByRole('row', { name: /2026-11-25/ });
  t.match(await row.textContent(), /2026-11-25\s*3\s*1,200\s*300\s*\$0\.0123/, 'usage by day: calls, tokens, cost');
  t.match(await page.locator('.budgets li').first().textContent(), /user · day.*8,200 of 10,000 tokens/, 'a budget with its use');
  t.match(await page.locator('.budgets li').nth(1).textContent(), /\$50\.00 of \$50\.00 cost · spent/, 'a spent one says so');
  await page.getByLabel('Group by').selectOption('model');
  await page.getByRole('row', { name: /gpt-4o-mini/ }).waitFor();
  t.equal(asked.filter((a) => a.url.pathname === '/api/usage').at(-1)?.url.searchParams.get('group_by'), 'model', 'regrouped by asking the service');
  await shot(page, '40-usage-desktop');
  a11y.push(...(await axe(page)).map((v) => `usage: ${v}`));
  await page.setViewportSize(PHONE);
  await shot(page, '40-usage-phone');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 1, `no sideways scrolling at 390 px (${overflow})`);
  await page.setViewportSize({ width: 1280, height: 860 });

  await page.goto(`${app.url}/audit`);
  t.match(await page.getByRole('row', { name: /Bash/ }).textContent(), /denied.*Bash.*curl x \| sh.*deny Bash curl\*.*\(install\)/, 'an audit record');
  const filtered = page.waitForRequest((r) => new URL(r.url()).pathname === '/api/audit' && new URL(r.url()).searchParams.get('action') === 'denied');
  await page.getByLabel('Action').selectOption('denied');
  await t.resolves(filtered, 'filtered by action through the query');
  await shot(page, '42-audit-desktop');
  a11y.push(...(await axe(page)).map((v) => `audit: ${v}`));

  await page.goto(`${app.url}/sessions/${sid}/policy`);
  await page.getByText('git push*').waitFor();
  t.equal(await page.getByRole('button', { name: /^Remove rule/ }).count(), 1, 'only the session’s own rule can be removed here');
  await page.getByLabel('Action', { exact: true }).selectOption('deny');
  await page.getByLabel('Tool, provider or glob').fill('Write');
  await page.getByLabel('Pattern (optional)').fill('secrets/**');
  const putting = page.waitForRequest((r) => r.method() === 'PUT');
  await page.getByRole('button', { name: 'Add rule' }).click();
  t.same((await putting).postDataJSON(), { rules: [{ tool: 'WebFetch', action: 'deny' }, { tool: 'Write', action: 'deny', pattern: 'secrets/**' }] }, 'PUT .../policy with the session’s rules only, the new one added');
  await shot(page, '41-policy-desktop');
  a11y.push(...(await axe(page)).map((v) => `policy: ${v}`));
  await context.unroute(/\/api\/(usage|budgets|audit|sessions\/[^/]+\/policy)(\?|$)/);

  // An approval: the run engine's policy gate holds the Write call; the chat shows it as buttons.
  // What the page sends on its socket: Socket.IO event frames, `42<ack id>[name, payload]`.
  let answered: (frame: [string, any]) => void;
  const answerFrame = new Promise<[string, any]>((r) => (answered = r));
  page.on('websocket', (ws) =>
    ws.on('framesent', ({ payload }) => {
      const m = /^42\d*(\[.*\])$/s.exec(String(payload));
      const frame = m && JSON.parse(m[1]);
      if (frame?.[0] === 'chat:send' && frame[1]?.askuser_answer) answered(frame);
    }),
  );
  await page.goto(`${app.url}/sessions/${sid}`);
  await page.getByLabel('Message', { exact: true }).fill('deploy it');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  const approval = page.getByRole('region', { name: 'Approval: Write' });
  await approval.waitFor();
  t.match(await approval.textContent(), /wants to run Write.*Rule “ask Write \*\.sh” from install asks you first/, 'what would run and the rule that asks');
  t.same([await approval.locator('dt').allTextContents(), await approval.locator('dd').allTextContents()], [['file path'], ['deploy.sh']], 'with its arguments as labelled fields');
  t.same(await approval.getByRole('button').allTextContents(), ['Allow once', 'Allow for this session', 'Deny'], 'the options as buttons');
  // The approval event reaches the page as the run pauses; the session's status is stored with the pause.
  const status = async () => (await (await app.api(`/api/sessions/${sid}`)).json()).status as string;
  t.equal(await waitFor(async () => ((await status()) === 'waiting_for_input' ? 'waiting_for_input' : null), { what: 'the session waiting for input' }).catch(status), 'waiting_for_input', 'the session waits for the answer');
  await shot(page, '43-approval-desktop');
  a11y.push(...(await axe(page)).map((v) => `approval: ${v}`));
  await approval.getByLabel('Reason (optional)').fill('not on a Friday');
  await approval.getByRole('button', { name: 'Deny' }).click();
  const answer = await answerFrame;
  const call = (await (await app.api(`/api/sessions/${sid}/messages`)).json()).flatMap((x: any) => x.tool_calls).find((c: any) => c.tool_name === 'Write');
  t.same(answer[1], { session_id: sid, message: '', askuser_answer: { tool_call_id: call.id, selections: { '0': [2] }, custom: { '0': 'not on a Friday' } } }, 'Deny sent as docs/policy.md says, with the reason');

  t.same(a11y, [], 'axe-core: no serious or critical finding');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
