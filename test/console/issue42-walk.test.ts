import t from 'tap';
import type { Page } from 'playwright-core';
import { buildWithModel, createSession, echoTool } from '../helpers/chat.js';
import { missingCommand, needs } from '../helpers/needs.js';
import { axe, DESKTOP, launch, open, PHONE, sendMessage, shot, signIn } from './browser.js';

/**
 * Issue #42's console items that no other test shows at 390 px, or not at all: the sign-in hint
 * names the home's setting; Ctrl+Shift+O comes back to the new-chat composer from a session;
 * `Bash` shows its command and output; an approval's arguments read as fields, not JSON; a live
 * sub-agent, a failed run, a budget warning and an approval at phone width (axe-clean, nothing
 * sideways). Screens in /tmp/console-shots/9x-*.
 */

const lastUser = (body: any): string => {
  const m = [...body.messages].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
};
const SUB_WORDS = Array.from({ length: 30 }, (_, i) => `step${i} `);

function script(body: any) {
  if (String(body.messages[0].content).startsWith('You are a sub-agent')) return { delayMs: 150, text: SUB_WORDS };
  const said = lastUser(body);
  const afterTool = body.messages.at(-1)?.role === 'tool';
  if (said.includes('bash please')) return afterTool ? { text: ['Ran it:\n\n```bash\necho hello-from-bash\n```\n'] } : { toolCalls: [{ name: 'Bash', args: { command: 'echo hello-from-bash' } }] };
  if (said.includes('agent please')) return afterTool ? { text: ['The sub-agent is done.'] } : { toolCalls: [{ name: 'Agent', args: { description: 'count the steps', prompt: 'Count the steps' } }] };
  if (said.includes('fail please')) return { status: 400 };
  if (said.includes('deploy please')) return afterTool ? { text: ['Deployed.'] } : { toolCalls: [{ name: 'Deploy', args: { say: 'prod' } }] };
  return { text: ['Counted.'], usage: { prompt_tokens: 70, completion_tokens: 15 } };
}

const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

t.test('console: issue #42 items at 1280 and 390 px', { timeout: 120_000 }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_TIMEZONE: 'UTC' });
  model.fallback = script;
  app.service.tools.register({ ...echoTool(), name: 'Deploy', description: 'deploy' });
  app.service.hooks.gate('tool.before', ({ tool }) =>
    tool.name === 'Deploy'
      ? { action: 'ask', question: { tool_name: 'Deploy', arguments: { say: 'prod' }, rule: { tool: 'Deploy', action: 'ask' }, source: 'install', options: ['Allow once', 'Allow for this session', 'Deny'] } }
      : undefined,
  );
  const budget = await createSession(app, app.adminKey, { intent: 'Budget' });
  t.equal((await app.api(`/api/sessions/${budget}/budget`, { method: 'PUT', json: { budgets: [{ period: 'day', max_tokens: 100 }] } })).status, 200);
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`);
  const findings: string[] = [];
  /** Axe, sideways scrolling and a screenshot of the screen as it is, at both widths. */
  const both = async (name: string) => {
    for (const [width, viewport] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ] as const) {
      await page.setViewportSize(viewport);
      findings.push(...(await axe(page)).map((v) => `${name} (${width}): ${v}`));
      const wide = await sideways(page);
      if (wide > 1) findings.push(`${name} (${width}): ${wide} px sideways`);
      await shot(page, `9x-${name}-${width}`);
    }
    await page.setViewportSize(DESKTOP);
  };

  // The sign-in hint names the setting that moves the home, not one fixed path.
  const hint = (await page.locator('.hint').textContent()) ?? '';
  t.equal(hint, 'agentsvc up wrote the admin key to admin.key in its home (AGENTSVC_HOME, ~/.agentsvc unless set); agentsvc keys create makes more.');
  await both('signin');
  await signIn(page, app.adminKey);

  // Bash: its command and its output, not JSON (the command runs in the sandbox: bubblewrap).
  if (!needs(t, 'the Bash call of the walk', missingCommand('bwrap', 'bubblewrap'))) {
    await sendMessage(page, 'bash please');
    await page.waitForURL(/\/sessions\/sess_/);
    await page.getByText('Ran it:').waitFor();
    const bash = page.locator('.tool', { has: page.locator('.tname', { hasText: 'Bash' }) });
    await bash.locator('summary').first().click();
    t.match(await bash.textContent(), /echo hello-from-bash[\s\S]*hello-from-bash/, 'the command, then what it printed');
    t.notMatch(await bash.textContent(), /"command"/, 'no raw JSON');
    await both('bash');
  } else {
    await sendMessage(page, 'agent please');
    await page.getByText('The sub-agent is done.').waitFor({ timeout: 30_000 });
  }

  // Ctrl+Shift+O from a session: the new-chat composer, focused.
  await page.keyboard.press('Control+Shift+O');
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/', 'back to the new chat');
  t.equal(await page.evaluate(() => document.activeElement?.id), 'first-message', 'its composer has the focus');

  // A running sub-agent at 390 px: its newest text under its call.
  await sendMessage(page, 'agent please');
  await page.waitForURL(/\/sessions\/sess_/);
  await page.setViewportSize(PHONE);
  await page.waitForFunction(() => /step[3-9]/.test(document.querySelector('.tool .sublive')?.textContent ?? ''));
  await shot(page, '9x-subagent-live-phone');
  findings.push(...(await axe(page)).map((v) => `sub-agent (phone): ${v}`));
  await page.setViewportSize(DESKTOP);
  await page.getByText('The sub-agent is done.').waitFor({ timeout: 30_000 });

  // A failed run: a sentence with what to do, at both widths.
  await page.keyboard.press('Control+Shift+O');
  await sendMessage(page, 'fail please');
  await page.waitForURL(/\/sessions\/sess_/);
  await page.getByRole('alert').filter({ hasText: /^The model did not answer/ }).waitFor();
  await both('error');

  // A budget warning, at both widths.
  await page.getByRole('navigation', { name: 'Sessions' }).getByRole('link', { name: /^Budget/ }).click();
  await page.getByText('No messages yet.').waitFor();
  await sendMessage(page, 'count them');
  await page.getByRole('list', { name: 'Notices' }).getByRole('listitem').first().waitFor();
  await page.getByText('Counted.').waitFor();
  await both('budget-notice');

  // An approval, at both widths; the sidebar says the session waits.
  await page.keyboard.press('Control+Shift+O');
  await sendMessage(page, 'deploy please');
  await page.waitForURL(/\/sessions\/sess_/);
  const approval = page.getByRole('region', { name: 'Approval: Deploy' });
  await approval.waitFor();
  t.same([await approval.locator('dt').allTextContents(), await approval.locator('dd').allTextContents()], [['say'], ['prod']], 'what would run as labelled fields, not JSON');
  t.notMatch(await approval.textContent(), /[{}"]/, 'no braces or quotes');
  await page.locator('nav.side a[aria-current="page"] .status', { hasText: 'waiting for input' }).waitFor();
  await both('approval');
  await page.getByRole('region', { name: 'Approval: Deploy' }).getByRole('button', { name: 'Allow once' }).click();
  await page.getByText('Deployed.').waitFor();

  // The sessions list at 390 px (the home page shows it under the composer).
  await page.keyboard.press('Control+Shift+O');
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  await both('sessions');

  t.same(findings, [], 'axe-core: no serious or critical finding, nothing sideways');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
