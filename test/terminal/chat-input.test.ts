import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { artifact, BIN, tmuxMissing, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * The chat client's input and rendering as a person meets them, in tmux: a 3-line paste is one
 * message, text typed while an answer streams is sent after it, /help never reaches the model,
 * markdown (heading, list, table, code block) is rendered, parallel sub-agents print as blocks.
 * Screens are saved to test/artifacts/terminal/.
 */

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-input-${process.pid}`);

function start(name: string, env: Record<string, string>, args: string[]) {
  const vars = Object.entries(env).map(([k, v]) => `${k}='${v}'`).join(' ');
  tmux('new-session', '-d', '-s', name, '-x', '100', '-y', '50', `env ${vars} '${process.execPath}' '${BIN}' ${args.join(' ')}; echo "[exit $?]"; sleep 120`);
}

const userMessages = (model: { requests: any[] }) => model.requests.map((r) => r.messages.filter((m: { role: string }) => m.role === 'user').at(-1)?.content);

t.test('paste, queue, /help, markdown', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t);
  t.teardown(kill);
  // Colours on (the test runner may set NO_COLOR), to see the highlighting.
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url, NO_COLOR: '' };
  start('in', env, ['chat']);
  await waitFor('in', /new session \(made by your first message\)/);

  // /help is answered by the client: nothing reaches the model, no session is made.
  tmux('send-keys', '-t', 'in', '/help', 'Enter');
  let text = await waitFor('in', /\/rewind \[CHECKPOINT_ID\]/);
  artifact('help.txt', text);
  t.equal(model.requests.length, 0, '/help never goes to the model');
  t.equal((await (await app.api('/api/sessions')).json()).total, 0, 'no session before the first message');

  // A 3-line bracketed paste, then Enter: one message of 3 lines. Its answer streams slowly.
  const md = ['# Plan\n\n', 'Some **bold** and *italic* text.\n\n', '- item a\n', '- item b\n\n', '| name | size |\n', '|---|---|\n', '| a.txt | 3 |\n\n', '```python\n', "def hi():\n    print('hi')\n", '```\n\n', 'Done.'];
  model.script({ text: md, delayMs: 250 }, { text: ['Second answer.'] });
  tmux('set-buffer', '-b', 'p3', 'line one\nline two\nline three');
  tmux('paste-buffer', '-p', '-b', 'p3', '-t', 'in');
  text = await waitFor('in', /line three\n─+$/);
  artifact('paste-in-editor.txt', text);
  t.match(text, /line one\nline two\nline three\n─+$/, 'the editor holds the 3 lines, nothing was sent');
  t.equal(model.requests.length, 0);
  tmux('send-keys', '-t', 'in', 'Enter');

  // Typed while the answer streams: queued, shown under the spinner, sent when the run ends.
  await waitFor('in', /# Plan/);
  tmux('send-keys', '-t', 'in', 'second message', 'Enter');
  text = await waitFor('in', /Esc to stop\nqueued › second message\n/);
  artifact('queued.txt', text);
  t.match(text, /⠀|[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (Thinking…|\w+…) \d+s · Esc to stop/, 'a spinner with the elapsed time');
  text = await waitFor('in', /Second answer\.\n10 in · 5 out tokens\n\n?─+\n.*\n─+$/);
  artifact('markdown.txt', text);
  t.same(userMessages(model), ['line one\nline two\nline three', 'second message'], 'the paste was one message of 3 lines, the queued text the next');

  // Markdown rendered: heading without its #, emphasis without stars, a drawn table, a fenced block.
  t.match(text, /› line one\n {2}line two\n {2}line three\nsession (sess_\w+) \(new\)\nPlan\n\nSome bold and italic text\.\n\n- item a\n- item b\n\n┌─+┬─+┐\n│ name +│ size │\n├─+┼─+┤\n│ a\.txt │ 3 +│\n└─+┴─+┘\n\n```python\n {2}def hi\(\):\n {6}print\('hi'\)\n```\n\nDone\.\n10 in · 5 out tokens\n› second message\nSecond answer\./);
  const colored = tmux('capture-pane', '-p', '-e', '-t', 'in');
  const esc = String.fromCharCode(27);
  t.match(colored, new RegExp(`${esc}\\[[0-9;]*m+def${esc}\\[[0-9;]*m`), 'the code block is highlighted');
  const sid = /session (sess_\w+) \(new\)/.exec(text)![1];
  const session = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(session.intent, 'line one', 'the session is titled by its first message');

  // History: up arrow brings back the last message.
  tmux('send-keys', '-t', 'in', 'Up');
  await waitFor('in', /─+\nsecond message\n─+$/);
  tmux('send-keys', '-t', 'in', 'C-u');

  // Alt-Enter and a trailing backslash add lines; Enter sends the three as one message.
  model.script({ text: ['Three lines.'] });
  tmux('send-keys', '-t', 'in', 'first', 'M-Enter');
  tmux('send-keys', '-t', 'in', 'second\\', 'Enter');
  tmux('send-keys', '-t', 'in', 'third');
  await waitFor('in', /─+\nfirst\nsecond\nthird\n─+$/);
  tmux('send-keys', '-t', 'in', 'Enter');
  await waitFor('in', /Three lines\./);
  t.equal(userMessages(model).at(-1), 'first\nsecond\nthird');

  // Slash commands on the REST interface: /title renames, /mode is sent with the next message.
  tmux('send-keys', '-t', 'in', '/title Markdown demo', 'Enter');
  await waitFor('in', /title: Markdown demo/);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'Markdown demo');
  tmux('send-keys', '-t', 'in', '/model', 'Enter');
  await waitFor('in', /● fake-model/);
  tmux('send-keys', '-t', 'in', '/mode planning', 'Enter');
  await waitFor('in', /mode planning for the next messages/);
  tmux('send-keys', '-t', 'in', '/nope', 'Enter');
  text = await waitFor('in', /unknown command \/nope/);
  artifact('slash.txt', text);
  t.equal(model.requests.length, 3, 'no slash command reached the model');

  // Ctrl-D on an empty editor quits.
  tmux('send-keys', '-t', 'in', 'C-d');
  await waitFor('in', /\[exit 0\]/);
});

t.test('opening chat and quitting leaves no session behind', { skip: noTmux }, async (t) => {
  const { app } = await buildWithModel(t);
  t.teardown(kill);
  start('empty', { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, ['chat']);
  await waitFor('empty', /new session/);
  tmux('send-keys', '-t', 'empty', 'C-d');
  await waitFor('empty', /\[exit 0\]/);
  t.equal((await (await app.api('/api/sessions')).json()).total, 0);
});

t.test('typing while 500 deltas/s stream: every key arrives, the message is sent after the run', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t);
  t.teardown(kill);
  start('fast', { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, ['chat']);
  await waitFor('fast', /new session/);
  // 1,500 deltas 2 ms apart (the fake model's pace: about 500/s), words and line breaks.
  model.script({ text: Array.from({ length: 1500 }, (_, i) => (i % 12 === 11 ? `w${i}\n\n` : `w${i} `)), delayMs: 2 }, { text: ['got it'] });
  tmux('send-keys', '-t', 'fast', 'go', 'Enter');
  await waitFor('fast', /w2\d /);
  const typed = 'the quick brown fox jumps over the lazy dog 0123456789';
  for (const ch of typed) tmux('send-keys', '-t', 'fast', '-l', ch);
  tmux('send-keys', '-t', 'fast', 'Enter');
  const text = await waitFor('fast', /got it\n10 in · 5 out tokens\n─+\n\n─+$/, 120_000);
  artifact('fast-stream.txt', text);
  t.equal(userMessages(model).at(-1), typed, 'the typed text, whole, sent after the run');
  t.match(text, /w1499\n/, 'the answer streamed to its end');
});

t.test('stdout to a file, typing on the terminal: the file gets the conversation, the terminal the prompt', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t);
  t.teardown(kill);
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-lines-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'chat.log');
  start('lines', { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, ['chat', '>', file]);
  await waitFor('lines', /›$/);
  model.script({ text: ['# Title\n\n', 'plain **text**'] });
  tmux('send-keys', '-t', 'lines', 'hello', 'Enter');
  await waitFor('lines', /› hello\n›$/);
  tmux('send-keys', '-t', 'lines', '/exit', 'Enter');
  await waitFor('lines', /\[exit 0\]/);
  const log = readFileSync(file, 'utf8');
  t.match(log, /^new session \(made by your first message\)[^\n]*\nsession sess_\w+ \(new\)\n# Title\n\nplain \*\*text\*\*\n$/, 'the conversation as plain text, nothing typed, no escapes');
  t.equal(userMessages(model).at(-1), 'hello');
});

/** Root: two parallel Agent calls, then a final answer. Sub-agents: text streamed word by word. */
function router(body: any) {
  const sys = body.messages[0].content as string;
  const last = body.messages.at(-1);
  if (sys.startsWith('You are a sub-agent')) {
    const prompt = body.messages[1].content as string;
    return { text: Array.from({ length: 8 }, (_, i) => `${prompt}${i} `), delayMs: 40 };
  }
  if (last.role === 'tool') return { text: ['Both agents are done.'] };
  return { toolCalls: ['alpha', 'beta'].map((p) => ({ name: 'Agent', args: { description: `look at ${p}`, prompt: p } })) };
}

t.test('parallel sub-agents print as separate blocks labelled by their description', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t);
  t.teardown(kill);
  model.script(...Array.from({ length: 6 }, () => router));
  start('agents', { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, ['chat']);
  await waitFor('agents', /new session/);
  tmux('send-keys', '-t', 'agents', 'fan out', 'Enter');
  const text = await waitFor('agents', /Both agents are done\.\n/);
  artifact('sub-agents.txt', text);
  for (const p of ['alpha', 'beta']) {
    const words = Array.from({ length: 8 }, (_, i) => `${p}${i}`).join(' ');
    t.match(text, new RegExp(`│ look at ${p}\\n│ ${words}\\n {2}└ look at ${p} · done`), `${p}: one block under its label, its result names it`);
  }
  t.notMatch(text, /(alpha\d \S*beta|beta\d \S*alpha)/, 'no interleaving');
});
