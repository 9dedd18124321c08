import t from 'tap';
import type { Page } from 'playwright-core';
import { turnText } from '../../src/core/conversation/turns.js';
import { buildWithModel } from '../helpers/chat.js';
import { axe, DESKTOP, launch, open, PHONE, shot } from './browser.js';

/**
 * The web console driven as a person would, in headless Chromium against the real service and the
 * fake model: sign in, new session, text streaming in, a tool call opened, a question answered
 * with a button, a run stopped, the connection dropped mid-stream and caught up with nothing lost
 * or repeated, and a second user who sees none of it.
 */

const lastUser = (body: any): string => {
  const m = [...body.messages].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
};
const afterTool = (body: any) => body.messages.at(-1)?.role === 'tool';
const DROP_WORDS = Array.from({ length: 40 }, (_, i) => `w${i} `);

function script(body: any) {
  if (String(body.messages[0].content).startsWith('You are a sub-agent')) return { text: ['Sub-agent found 3 files.'] };
  const said = lastUser(body);
  if (said.includes('delegate')) {
    if (!afterTool(body)) return { toolCalls: [{ name: 'Agent', args: { description: 'count files', prompt: 'Count the files' } }] };
    return { text: ['Delegated.'] };
  }
  if (said.includes('stream please')) {
    if (!afterTool(body)) return { reasoning: ['Thinking about ', 'the request.'], text: ['I will write a note.'], toolCalls: [{ name: 'Write', args: { file_path: 'notes.md', content: '# Notes\nhello\n' } }] };
    return {
      delayMs: 150,
      text: ['Here ', 'is ', 'the ', 'answer ', 'with code:\n\n```js\nconst x = 1;\n```\n\n', 'See [a link](https://example.com).\n\n', '<script>window.pwned = 1</script> ', '<img src=x onerror="window.pwned=2"> ', 'END.'],
    };
  }
  if (said.includes('ask me')) {
    if (!afterTool(body)) return { toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which colour?', header: 'Colour', options: [{ label: 'Red' }, { label: 'Blue' }] }] } }] };
    return { text: [`You chose: ${String(body.messages.at(-1).content).includes('Blue') ? 'blue' : 'something else'}.`] };
  }
  if (said.includes('long run')) return { delayMs: 200, text: Array.from({ length: 300 }, () => 'word ') };
  if (said.includes('drop test')) return { delayMs: 80, text: DROP_WORDS };
  return { text: ['ok'] };
}

/** Text of the agent turns shown in the chat, in order. */
const shownAgentText = (page: Page) => page.locator('.turns > article.turn.assistant > .md').allTextContents();

async function send(page: Page, text: string) {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByLabel('Message', { exact: true }).press('Enter');
}

t.test('console: sign in, stream, tools, question, stop, reconnect, second user', { timeout: 300_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = script;
  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, app.url + '/');
  const a11y: string[] = [];
  const check = async (screen: string) => a11y.push(...(await axe(page)).map((v) => `${screen}: ${v}`));

  // Sign in: a wrong key shows the service's own words (the `detail` of docs/errors.md), the right one enters.
  await page.getByLabel('API key').fill('sk-agentsvc-v2-not-a-real-key-000000000000000000');
  await page.getByRole('button', { name: 'Sign in' }).click();
  t.equal(await page.getByRole('alert').textContent(), 'missing or invalid API key', 'the 401 detail, as the service wrote it');
  await shot(page, '01-signin-desktop');
  await check('sign-in');
  await page.getByLabel('API key').fill(app.adminKey);
  await page.getByLabel('API key').press('Enter');
  await page.getByText('No sessions yet.').waitFor();
  t.equal(await page.evaluate(() => sessionStorage.getItem('agentsvc.key')), app.adminKey, 'the key is kept in the tab session storage');
  t.equal(await page.evaluate(() => localStorage.length), 0, 'and nowhere that outlives the tab');

  // New session with a title, model and mode: the sidebar's form, beside any page but the home
  // page (whose composer is its one way to start a session).
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Usage' }).click();
  await page.getByPlaceholder('New session title (optional)').fill('Console demo');
  await page.getByLabel('Mode', { exact: true }).selectOption('executing');
  await page.getByRole('button', { name: 'New session' }).click();
  await page.waitForURL(/\/sessions\/sess_/);
  const sid = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await page.getByText('No messages yet.').waitFor();
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'Console demo', 'created with its title');

  // Streaming: the answer appears piece by piece, then whole; a tool call and thinking are folded.
  await send(page, 'stream please');
  await page.locator('.tool .tname', { hasText: 'Write' }).waitFor();
  await t.resolves(
    page.waitForFunction(() => {
      const md = Array.from(document.querySelectorAll('.turns > article.turn.assistant .md')).map((e) => e.textContent ?? '').join('|');
      return md.includes('Here is') && !md.includes('END.');
    }),
    'part of the answer is shown before the rest has arrived',
  );
  await page.getByRole('button', { name: 'Stop' }).waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 20_000 });
  const answer = page.locator('.turns > article.turn.assistant .md').last();
  t.match(await answer.textContent(), /Here is the answer with code:[\s\S]*END\./, 'the whole answer');
  t.equal(await answer.locator('pre.code code.hljs .hljs-keyword').first().textContent(), 'const', 'code is highlighted');
  t.equal(await answer.locator('script, img[onerror], [onerror]').count(), 0, 'raw HTML from the model is not markup');
  t.match(await answer.textContent(), /<script>window\.pwned = 1<\/script>/, 'it is shown as text');
  t.equal(await page.evaluate(() => (window as { pwned?: unknown }).pwned ?? null), null, 'nothing the model wrote ran');
  t.equal(await answer.locator('a[href="https://example.com"]').getAttribute('rel'), 'noopener noreferrer nofollow', 'links open without an opener');
  const thinking = page.locator('details.thinking').first();
  t.equal(await thinking.getAttribute('open'), null, 'thinking is folded');
  await thinking.locator('summary').click();
  t.match(await thinking.textContent(), /Thinking about the request\./);
  const tool = page.locator('.tool', { hasText: 'Write' }).first();
  t.notOk(await tool.locator('.diff').isVisible(), 'the tool call is folded');
  await tool.locator('summary').focus();
  await page.keyboard.press('Enter');
  t.equal(await tool.locator('.diff figcaption').textContent(), 'notes.md +2 -0 (2 lines added, 0 removed)', 'opened by keyboard: the file it writes');
  t.same(await tool.locator('.diff .d-add').allTextContents(), ['+added: # Notes\n', '+added: hello\n'], 'and its lines, as added');
  t.match(await tool.locator('pre.result').textContent(), /notes\.md/, 'and its result');
  t.match(await tool.locator('.tstatus').textContent(), /done/);
  await shot(page, '03-chat-desktop');
  await check('chat');

  // A question comes as buttons; the answer goes back as chat:send askuser_answer.
  await send(page, 'ask me');
  await page.getByRole('button', { name: 'Blue' }).waitFor();
  t.equal(await page.getByRole('button', { name: 'Answer' }).isDisabled(), true, 'nothing to send before a choice');
  await page.getByRole('button', { name: 'Blue' }).click();
  t.equal(await page.getByRole('button', { name: 'Blue' }).getAttribute('aria-pressed'), 'true');
  await shot(page, '04-question-desktop');
  await check('question');
  await page.getByRole('button', { name: 'Answer' }).click();
  await page.getByText('You chose: blue.').waitFor();
  t.notOk(await page.getByRole('button', { name: 'Answer' }).isVisible(), 'the question is gone once answered');

  // A sub-agent's turns are nested under the call that started it.
  await send(page, 'delegate');
  await page.getByText('Delegated.').waitFor();
  const fork = page.locator('.tool', { hasText: 'count files' }).first();
  await fork.locator('summary').first().click();
  t.equal((await fork.locator('.subagent article.turn .md').textContent())?.trim(), 'Sub-agent found 3 files.', 'the sub-agent answer, inside its Agent call');
  t.equal(await page.locator('.turns > article.turn', { hasText: 'Sub-agent found 3 files.' }).count(), 1, 'and not a turn of the main chat');
  await shot(page, '04b-subagent-desktop');

  // Stop: the run ends within moments, its turn marked interrupted.
  await send(page, 'long run');
  await page.waitForFunction(() => (document.querySelector('.turns > article.turn.assistant:last-of-type .md')?.textContent ?? '').includes('word word'));
  const t0 = Date.now();
  await page.getByRole('button', { name: 'Stop' }).click();
  await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 5_000 });
  t.ok(Date.now() - t0 < 4_000, `stopped in ${Date.now() - t0} ms`);
  await page.locator('.turns > article.turn.assistant.ts-interrupted').waitFor();
  const stopped = await app.api(`/api/sessions/${sid}`).then((r) => r.json());
  t.equal(stopped.status, 'interrupted', 'the session says so too');

  // A dropped connection mid-stream: "Reconnecting…", then the view catches up from its last seq.
  await send(page, 'drop test');
  await page.waitForFunction(() => (document.querySelector('.turns > article.turn.assistant:last-of-type .md')?.textContent ?? '').includes('w3 '));
  for (const s of app.service.io.sockets.sockets.values()) s.conn.close();
  await page.getByText('Reconnecting…').waitFor();
  await shot(page, '05-reconnecting-desktop');
  await page.getByText('Reconnecting…').waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 20_000 });
  await page.waitForFunction(() => (document.querySelector('.turns > article.turn.assistant:last-of-type .md')?.textContent ?? '').includes('w39'));
  const stored = (await (await app.api(`/api/sessions/${sid}/messages`)).json()).filter((x: any) => x.role === 'assistant' && !x.parent_fork_tool_call_id);
  const shown = await shownAgentText(page);
  t.equal(shown.at(-1)?.trim(), turnText(stored.at(-1)).trim(), 'the last answer matches GET .../messages: nothing lost or repeated');
  t.equal(shown.at(-1)?.trim(), DROP_WORDS.join('').trim());

  // Reload: the same conversation is rebuilt from the stream and the stored turns.
  await page.reload();
  await page.getByText('You chose: blue.').waitFor();
  const again = (await shownAgentText(page)).map((s) => s.trim());
  const want = stored.map((x: any) => turnText(x).trim()).filter(Boolean);
  // Rendered markdown drops the markup (fences, link syntax); each text ends as stored.
  t.equal(again.length, want.length, `after a reload: ${want.length} agent texts, each once`);
  t.ok(
    want.every((w: string, i: number) => again[i]?.endsWith(w.slice(-12))),
    'in the stored order',
  );

  // Phone width: the chat alone, with a way back to the list.
  await page.setViewportSize(PHONE);
  await shot(page, '06-chat-phone');
  await check('chat (phone)');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 1, `no sideways scrolling at 390 px (${overflow})`);
  await page.getByRole('link', { name: 'Back to the sessions' }).click();
  await page.getByRole('link', { name: /Console demo/ }).waitFor();
  await shot(page, '02-sessions-phone');
  await page.setViewportSize(DESKTOP);

  // Dark theme.
  const dark = await open(browser, `${app.url}/sessions/${sid}`, { colorScheme: 'dark' });
  await dark.page.evaluate((k) => sessionStorage.setItem('agentsvc.key', k), app.adminKey);
  await dark.page.reload();
  await dark.page.getByText('You chose: blue.').waitFor();
  await dark.page.getByRole('link', { name: /Console demo/ }).waitFor();
  await shot(dark.page, '07-chat-dark-desktop');
  await dark.page.setViewportSize(PHONE);
  await shot(dark.page, '07-chat-dark-phone');
  a11y.push(...(await axe(dark.page)).map((v) => `chat (dark): ${v}`));
  await dark.context.close();

  // A second user: their own, empty list; the first user's session is not found.
  const { key: other } = await app.newUser('second');
  const second = await open(browser, app.url + '/');
  await second.page.getByLabel('API key').fill(other);
  await second.page.getByRole('button', { name: 'Sign in' }).click();
  await second.page.getByText('No sessions yet.').waitFor();
  t.equal(await second.page.locator('.list li').count(), 0, 'the second user sees none of the first user sessions');
  await second.page.getByPlaceholder('Search titles and messages').fill('Console');
  await second.page.getByText('No session matches.').waitFor();
  await second.page.goto(`${app.url}/sessions/${sid}`);
  t.equal(await second.page.getByRole('alert').first().textContent(), 'Session not found: it may have been deleted, or it belongs to another user.', 'a direct link to it: not found, said as a sentence');
  await second.context.close();

  t.same(a11y, [], 'axe-core: no serious or critical finding on these screens');
  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
