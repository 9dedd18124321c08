import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { artifact, BIN, tmuxMissing, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * The interactive `agentsvc chat` in a real terminal (tmux, on a server of its own): a tool call,
 * an AskUserQuestion answered from the numbered menus, Ctrl-C while an answer streams, then the
 * double Ctrl-C that exits. Screens are saved to test/artifacts/terminal/.
 */

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-test-${process.pid}`);
/** The empty editor at the bottom of the screen: the client waits for input. */
// The arrow-key picker's line (a question or an approval waiting) may sit above the editor.
const IDLE = '(\\n❯ [^\\n]*)?\\n─+\\n\\n─+$';
const idle = (before: string) => new RegExp(`${before}${IDLE}`, 's');
/** The line after each answer: the run's tokens. */
const TOKENS = '\\n[\\d,]+ in · [\\d,]+ out tokens';

function start(name: string, env: Record<string, string>, args: string[]) {
  const vars = Object.entries(env).map(([k, v]) => `${k}='${v}'`).join(' ');
  // The shell prints the CLI's exit status and keeps the pane open for the last capture.
  tmux('new-session', '-d', '-s', name, '-x', '120', '-y', '40', `env ${vars} '${process.execPath}' '${BIN}' ${args.join(' ')}; echo "[exit $?]"; sleep 120`);
}

t.test('interactive chat: tool call, question menu, Ctrl-C while streaming, double Ctrl-C exits', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t);
  t.teardown(kill);
  app.service.tools.register({
    name: 'Echo',
    description: 'Echo the text back.',
    provider: 'builtin',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
    execute: async (args: { text: string }) => `echo: ${args.text}\n${Array.from({ length: 9 }, (_, i) => `row ${i + 2}`).join('\n')}`,
  });
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  start('chat', env, ['chat']);
  let text = await waitFor('chat', idle('new session \\(made by your first message\\)[^\\n]*'));

  // 1. A tool call: compact line, folded result, then the answer.
  model.script({ reasoning: ['Planning the call.'], text: ['Running echo.'], toolCalls: [{ name: 'Echo', args: { text: 'hi' } }] }, { text: ['Echo ', 'said ', 'hi.'] });
  tmux('send-keys', '-t', 'chat', 'run echo', 'Enter');
  text = await waitFor('chat', idle(`Echo said hi\\.${TOKENS}`));
  t.match(text, /› run echo\nsession sess_\w+ \(new\)\nPlanning the call\.\nRunning echo\.\n● Echo\(hi\)\n {2}└ done( \d+ms)? · echo: hi\n {4}row 2\n {4}row 3\n {4}row 4\n {4}… \+6 lines \(Ctrl-O expands\)\nEcho said hi\./);
  const sid = /session (sess_\w+)/.exec(text)![1];
  artifact('tool-call.txt', text);

  // 2. AskUserQuestion: a single-choice menu answered by number, a multi-select one by "1,3".
  const questions = [
    { question: 'Which color?', options: [{ label: 'red' }, { label: 'blue', description: 'calm' }, { label: 'green' }] },
    { question: 'Which sizes?', header: 'Sizes', multiSelect: true, options: [{ label: 'S' }, { label: 'M' }, { label: 'L' }] },
  ];
  model.script({ text: ['One question first.'], toolCalls: [{ name: 'AskUserQuestion', args: { questions } }] }, { text: ['You chose blue, S and L.'] });
  tmux('send-keys', '-t', 'chat', 'ask me', 'Enter');
  text = await waitFor('chat', idle('\\? Which color\\? \\(1\\/2\\)\\n {2}1\\. red\\n {2}2\\. blue - calm\\n {2}3\\. green\\n {2}choose a number, or type your own answer'));
  tmux('send-keys', '-t', 'chat', '7', 'Enter');
  await waitFor('chat', idle('› 7\\n {2}7 is not an option \\(1-3\\)'));
  tmux('send-keys', '-t', 'chat', '2', 'Enter');
  text = await waitFor('chat', idle('\\? Sizes: Which sizes\\? \\(2\\/2\\)\\n {2}1\\. S\\n {2}2\\. M\\n {2}3\\. L\\n {2}choose one or more[^\\n]*'));
  tmux('send-keys', '-t', 'chat', '1,3', 'Enter');
  text = await waitFor('chat', idle(`You chose blue, S and L\\.${TOKENS}`));
  t.match(text, /\? AskUserQuestion\(Which color\?\)/);
  artifact('question.txt', text);
  const answerMsg = model.requests.at(-1).messages.find((m: { role: string; content: string }) => m.role === 'tool' && /blue/.test(m.content));
  t.ok(answerMsg, 'the model got the answer as the tool result');
  t.match(answerMsg.content, /blue/);
  t.match(answerMsg.content, /S/);
  t.match(answerMsg.content, /L/);

  // 3. Ctrl-C while the answer streams: chat:stop, the run ends interrupted, the prompt returns.
  model.script({ text: Array.from({ length: 60 }, (_, i) => `tick${i} `), delayMs: 150 });
  tmux('send-keys', '-t', 'chat', 'count slowly', 'Enter');
  await waitFor('chat', /tick3 /);
  tmux('send-keys', '-t', 'chat', 'C-c');
  // After a stop the usage line counts what streamed (docs/socket-protocol.md).
  text = await waitFor('chat', idle('\\[stopping…\\][\\s\\S]*\\[chat interrupted: interrupted\\](\\n[^\\n]* tokens)?'));
  t.notMatch(text, /tick59/, 'the answer was cut short');
  artifact('ctrl-c.txt', text);
  const session = await (await app.api(`/api/sessions/${sid}`)).json();
  t.equal(session.status, 'interrupted');

  // 4. At the prompt: the first Ctrl-C shows a hint above the editor, the second (within a second) exits
  // and the client says how to resume.
  tmux('send-keys', '-t', 'chat', 'C-c');
  await waitFor('chat', /\nPress Ctrl-C again to exit\n─+\n\n─+$/);
  tmux('send-keys', '-t', 'chat', 'C-c');
  text = await waitFor('chat', new RegExp(`\\nresume with: agentsvc chat ${sid}\\n\\[exit 130\\]$`));
  artifact('exit.txt', text);

  // 5. Continuing the session shows its history, rendered the same way.
  start('again', env, ['chat', sid]);
  text = await waitFor('again', idle('session sess_\\w+ · /help · Esc stops an answer · Ctrl-C twice exits'));
  t.match(text, /> run echo\nPlanning the call\.\nRunning echo\.\n● Echo\(hi\)\n/);
  t.match(text, /> ask me\nOne question first\.\n● AskUserQuestion\(Which color\?\)\n {2}└ done · The user answered:\n/, 'the answered question, done');
  t.match(text, /> count slowly\ntick0 tick1 tick2 tick3 .*\n\[turn interrupted\]/);
  artifact('history.txt', text);
  tmux('send-keys', '-t', 'again', '/exit', 'Enter');
});
