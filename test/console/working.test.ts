import t from 'tap';
import type { Page } from 'playwright-core';
import { buildWithModel } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { axe, launch, open, PHONE, sendMessage, shot } from './browser.js';

/**
 * Working in the console as in opencode web (docs/console.md "Working in the chat"): the empty
 * state is a composer that starts the session; an answer of several model steps has one header;
 * Edit and Write show a diff, other tools readable fields; a running sub-agent shows what it does
 * under its call; code blocks have their language and a copy button; a message sent while a run
 * streams is queued (never an error on screen) and goes out when the run ends; Esc stops the run
 * and puts the queued text back in the composer; a failed run reads as a sentence.
 */

const lastUser = (body: any): string => {
  const m = [...body.messages].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
};
/** Tool results so far in this run (after the last user message). */
const toolsDone = (body: any) => {
  const i = body.messages.findLastIndex((x: any) => x.role === 'user');
  return body.messages.slice(i).filter((x: any) => x.role === 'tool').length;
};
const SUB_WORDS = Array.from({ length: 16 }, (_, i) => `step${i} `);

function script(body: any) {
  if (String(body.messages[0].content).startsWith('You are a sub-agent')) return { delayMs: 150, text: SUB_WORDS };
  const said = lastUser(body);
  if (said.startsWith('write code')) {
    const done = toolsDone(body);
    if (done === 0) return { toolCalls: [{ name: 'Write', args: { file_path: 'app.ts', content: 'const a = 1;\nconst b = 2;\n' } }] };
    if (done === 1) return { toolCalls: [{ name: 'Edit', args: { file_path: 'app.ts', old_string: 'const a = 1;\nconst b = 2;', new_string: 'const a = 10;\nconst b = 2;' } }] };
    if (done === 2) return { toolCalls: [{ name: 'Agent', args: { description: 'check the file', prompt: 'Read app.ts\nand say what a is' } }] };
    return { text: ['Done. The file:\n\n```ts\nconst a = 10;\n```\n'] };
  }
  if (said.includes('long run')) return { delayMs: 100, text: Array.from({ length: 40 }, () => 'word ') };
  if (said.includes('fail please')) return { status: 400 };
  return { text: [`echo: ${said}`] };
}

const alerts = (page: Page) => page.getByRole('alert').allTextContents();
const send = sendMessage;
const noSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

t.test('console: new chat, one header per answer, diffs, live sub-agent, queue, Esc, plain errors', { timeout: 120_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = script;
  const browser = await launch(t);
  if (!browser) return;
  const a11y: string[] = [];
  const check = async (screen: string) => a11y.push(...(await axe(page)).map((v) => `${screen}: ${v}`));
  const { page, problems, context } = await open(browser, `${app.url}/`);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByLabel('API key').press('Enter');

  // The empty state is a composer: the first message makes the session, titled from it.
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  t.equal(await page.evaluate(() => document.activeElement?.id), 'first-message', 'the composer has the focus');
  await shot(page, '70-new-chat-desktop');
  await check('new chat');
  await page.setViewportSize(PHONE);
  t.ok(await page.getByLabel('Message', { exact: true }).isVisible(), 'at 390 px too, above the sessions list');
  t.ok((await noSideways(page)) <= 1, 'no sideways scrolling at 390 px');
  await shot(page, '70-new-chat-phone');
  await check('new chat (phone)');
  await page.setViewportSize({ width: 1280, height: 860 });
  await send(page, 'write code please');
  await page.waitForURL(/\/sessions\/sess_/);
  const sid = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'write code please', 'titled from the first message');

  // A running sub-agent shows its newest text under its folded call, while it streams.
  const live = page.locator('.tool .sublive');
  await page.waitForFunction(() => /step[3-9]/.test(document.querySelector('.tool .sublive')?.textContent ?? ''));
  t.match(await live.textContent(), /step\d+/, `live progress of the sub-agent: ${await live.textContent()}`);
  t.match(await page.locator('.tool', { has: page.locator('.sublive') }).locator('.tname').textContent(), /^Sub-agent$/, 'under its Agent call (shown as Sub-agent)');
  await shot(page, '71-subagent-live-desktop');
  await page.getByText('Done. The file:').waitFor({ timeout: 30_000 });
  await page.getByRole('button', { name: 'Send' }).waitFor();
  t.equal(await live.count(), 0, 'gone once it is done');

  // One header per answer: four model steps, one "Agent" header with the tokens of all four.
  const answer = page.locator('.turns > article.turn.assistant');
  t.equal(await answer.count(), 4, 'four agent turns (one per model step)');
  t.equal(await page.locator('.turns > article.turn.assistant > .who').count(), 1, 'one header');
  t.equal((await page.locator('.turns > article.turn.assistant > .who').textContent())?.replace(/\s+/g, ' ').trim(), 'Agent · 40 in / 20 out tokens', 'with the tokens of the whole answer');

  // Edit and Write as diffs; the Agent call's arguments as fields with real line breaks.
  const write = page.locator('.tool', { has: page.locator('.tname', { hasText: 'Write' }) });
  await write.locator('summary').click();
  t.same(await write.locator('.d-add').allTextContents(), ['+added: const a = 1;\n', '+added: const b = 2;\n'], 'a Write: the lines it writes, added');
  const edit = page.locator('.tool', { has: page.locator('.tname', { hasText: 'Edit' }) });
  await edit.locator('summary').click();
  t.same(await edit.locator('.d-del').allTextContents(), ['-removed: const a = 1;\n'], 'an Edit: the line removed');
  t.same(await edit.locator('.d-add').allTextContents(), ['+added: const a = 10;\n'], 'and the line added');
  t.same(await edit.locator('.d-ctx').allTextContents(), [' const b = 2;\n'], 'with its context');
  t.equal(await edit.locator('.diff figcaption').textContent(), 'app.ts +1 -1 (1 lines added, 1 removed)');
  t.equal(await edit.getByText('"old_string"').count(), 0, 'no raw JSON');
  const agent = page.locator('.tool', { has: page.locator('.tname', { hasText: 'Agent' }) });
  await agent.locator('summary').first().click();
  t.same(await agent.locator('.tbody > .fields > .field > dt').allTextContents(), ['description', 'prompt'], 'arguments as labelled fields');
  t.equal(await agent.locator('.tbody > .fields > .field').nth(1).locator('dd').textContent(), 'Read app.ts\nand say what a is', 'a multi-line value with its line break, not \\n');
  t.notMatch(await agent.locator('.tbody > .fields').textContent(), /\\n|[{}]/, 'no escapes or braces');

  // Code blocks: their language and a copy button.
  const code = page.locator('.turns .codeblock').last();
  t.equal(await code.locator('.codehead .lang').textContent(), 'ts', 'the language');
  await code.getByRole('button', { name: 'Copy the ts code' }).click();
  await code.getByRole('button', { name: 'Copied the ts code' }).waitFor();
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), 'const a = 10;', 'the code is on the clipboard');
  await shot(page, '72-diff-desktop');
  await check('chat with diffs');
  await page.setViewportSize(PHONE);
  await shot(page, '72-diff-phone');
  t.ok((await noSideways(page)) <= 1, 'diffs fit at 390 px');
  await check('chat with diffs (phone)');
  await page.setViewportSize({ width: 1280, height: 860 });

  // Sent while a run streams: queued and shown as queued, no error; sent as one when it ends.
  await send(page, 'long run 1');
  await page.getByRole('button', { name: 'Stop' }).waitFor();
  await send(page, 'first queued');
  await send(page, 'second queued');
  const queued = page.getByRole('list', { name: 'Queued messages' }).getByRole('listitem');
  t.same(await queued.allTextContents(), ['queued first queued', 'queued second queued'], 'both shown as queued');
  t.same(await alerts(page), [], 'no error on screen');
  t.equal(await page.getByRole('button', { name: 'Stop' }).count(), 1, 'the run goes on');
  await shot(page, '73-queued-desktop');
  await check('queued');
  await page.setViewportSize(PHONE);
  await shot(page, '73-queued-phone');
  await page.setViewportSize({ width: 1280, height: 860 });
  const userTexts = async () =>
    ((await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[])
      .filter((m) => m.role === 'user')
      .map((m) => m.blocks.map((b: any) => b.content ?? '').join(''));
  const sent = await waitFor(async () => ((await userTexts()).includes('first queued\n\nsecond queued') ? userTexts() : null), { what: 'the queued messages sent', timeoutMs: 20_000 });
  t.equal(sent.filter((m) => m === 'first queued\n\nsecond queued').length, 1, 'sent as one message, once, once the run ended');
  await page.getByText('echo: first queued').waitFor();
  t.equal(await queued.count(), 0, 'the queue is empty');
  t.same(await alerts(page), [], 'and no error was shown');

  // Esc: the run stops and the queued text comes back into the composer, unsent.
  await send(page, 'long run 2');
  await page.getByRole('button', { name: 'Stop' }).waitFor();
  await page.waitForFunction(() => (document.querySelector('.turns > article.turn.assistant:last-of-type .md')?.textContent ?? '').includes('word word'));
  await send(page, 'keep me');
  await queued.first().waitFor();
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 5_000 });
  t.equal(await page.getByLabel('Message', { exact: true }).inputValue(), 'keep me', 'the queued text is back in the composer');
  t.equal(await queued.count(), 0, 'and no longer queued');
  await page.locator('.turns > article.turn.assistant.ts-interrupted').last().waitFor();
  t.notOk((await userTexts()).includes('keep me'), 'never sent');

  // A failed run reads as a sentence with what to do.
  await page.getByLabel('Message', { exact: true }).fill('');
  await send(page, 'fail please');
  const failed = page.getByRole('alert');
  await failed.waitFor();
  const said = (await failed.textContent()) ?? '';
  t.match(said, /^The model did not answer \(.*400.*\)\. Check the model endpoint in the service’s configuration \(agentsvc doctor\), then send again\.$/, `a sentence: ${said}`);
  await shot(page, '74-error-desktop');

  t.same(a11y, [], 'axe-core: no serious or critical finding');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
