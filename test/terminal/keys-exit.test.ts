import t from 'tap';
import { keysTerminal, IDLE, SLOW } from './keys-helpers.js';

/**
 * Leaving the interactive `agentsvc chat`, and Ctrl-O, under tmux with the fake model (issue #42;
 * docs/terminal-keys.md): Ctrl-C exits on a second press within a second on an empty, idle editor;
 * Ctrl-D during a run exits printing what was queued and how to resume; Ctrl-O shows the last
 * folded tool output whole. Screens in test/artifacts/terminal/keys-*.txt.
 */

const { tmux, screen, waitFor, show, started, waitGone, needTmux } = keysTerminal('keys-exit');

t.test('Ctrl-C on an idle, empty editor: a hint for a second, a second press within it exits', async (t) => {
  if (!needTmux(t)) return;
  await started(t, 'cx');
  const ARMED = new RegExp(`\\nPress Ctrl-C again to exit${IDLE}`);
  tmux('send-keys', '-t', 'cx', 'C-c');
  let text = await waitFor('cx', ARMED);
  show(t, 'keys-ctrl-c-armed.txt', text);
  // The hint goes after a second, and with it the armed exit: the next press arms again.
  const t0 = Date.now();
  text = await waitGone('cx', /Press Ctrl-C again/);
  t.ok(Date.now() - t0 < 3000, 'the hint went within the window');
  t.match(text, new RegExp(`made by your first message[^\\n]*${IDLE}`));
  tmux('send-keys', '-t', 'cx', 'C-c');
  await waitFor('cx', ARMED);
  t.notMatch(screen('cx'), /\[exit/, 'a press after the window re-arms, it does not exit');
  tmux('send-keys', '-t', 'cx', 'C-c');
  text = await waitFor('cx', /\n\[exit 130\]$/);
  show(t, 'keys-ctrl-c-exit.txt', text);
  t.notMatch(text, /resume with/, 'no session was made: nothing to resume');
});

t.test('Ctrl-D during a run exits, printing the unsent queue and how to resume', async (t) => {
  if (!needTmux(t)) return;
  const { model } = await started(t, 'cd');
  model.script(SLOW);
  tmux('send-keys', '-t', 'cd', 'count slowly', 'Enter');
  await waitFor('cd', /tick3 /);
  tmux('send-keys', '-t', 'cd', 'then do this', 'Enter');
  await waitFor('cd', /queued › then do this\n/);
  tmux('send-keys', '-t', 'cd', 'C-d');
  const text = await waitFor('cd', /\n\[exit 0\]$/);
  show(t, 'keys-ctrl-d.txt', text);
  const sid = /session (sess_\w+) \(new\)/.exec(text)![1];
  t.match(text, new RegExp(`\\n─+\\n\\nnot sent: then do this\\nthe answer goes on in the service; resume with: agentsvc chat ${sid}\\n\\[exit 0\\]$`));
});

t.test('Ctrl-O shows the last folded tool output whole', async (t) => {
  if (!needTmux(t)) return;
  const { app, model } = await started(t, 'co');
  app.service.tools.register({
    name: 'Rows',
    description: 'Ten rows.',
    provider: 'builtin',
    parameters: { type: 'object', properties: {} },
    execute: async () => Array.from({ length: 10 }, (_, i) => `row ${i + 1}`).join('\n'),
  });
  tmux('send-keys', '-t', 'co', 'C-o');
  await waitFor('co', new RegExp(`\\n\\[no folded tool output to expand\\]${IDLE}`));
  model.script({ toolCalls: [{ name: 'Rows', args: {} }] }, { text: ['Ten rows.'] });
  tmux('send-keys', '-t', 'co', 'rows please', 'Enter');
  await waitFor('co', new RegExp(`Ten rows\\.\\n[\\d,]+ in · [\\d,]+ out tokens${IDLE}`));
  tmux('send-keys', '-t', 'co', 'C-o');
  const rows = Array.from({ length: 10 }, (_, i) => ` {4}row ${i + 1}`).join('\\n');
  const text = await waitFor('co', new RegExp(`\\n {2}Rows output, all 10 lines:\\n${rows}${IDLE}`));
  show(t, 'keys-expand.txt', text);
  t.match(text, /└ done( \d+ms)? · row 1\n {4}row 2\n {4}row 3\n {4}row 4\n {4}… \+6 lines \(Ctrl-O expands\)\n/, 'folded first, with the key named');
  tmux('send-keys', '-t', 'co', '/exit', 'Enter');
});
