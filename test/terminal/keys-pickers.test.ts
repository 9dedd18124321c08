import t from 'tap';
import { echoTool } from '../helpers/chat.js';
import { keysTerminal, IDLE } from './keys-helpers.js';

/**
 * The arrow-key pickers of the interactive `agentsvc chat`, under tmux with the fake model
 * (docs/terminal-keys.md): an approval, and the checkpoints of /rewind. Screens in
 * test/artifacts/terminal/keys-*.txt.
 */

const { tmux, waitFor, show, started, needTmux } = keysTerminal('keys-pickers');

t.test('an approval is an arrow-key picker: Down/Up move it, Enter picks', async (t) => {
  if (!needTmux(t)) return;
  const { app, model } = await started(t, 'pk', { AGENTSVC_POLICY: JSON.stringify({ default: 'ask', rules: [] }) });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'hi' } }] }, { text: ['Said it.'] });
  tmux('send-keys', '-t', 'pk', 'say hi', 'Enter');
  const PICK = (line: string) => new RegExp(`\\n {2}choose 1-3[^\\n]*\\n❯ ${line} {2}↑↓ to choose, Enter to pick \\(or type\\)${IDLE}`);
  let text = await waitFor('pk', PICK('1\\. Allow once'));
  show(t, 'keys-picker.txt', text);
  tmux('send-keys', '-t', 'pk', 'Down');
  await waitFor('pk', PICK('2\\. Allow for this session'));
  tmux('send-keys', '-t', 'pk', 'Down');
  await waitFor('pk', PICK('3\\. Deny'));
  tmux('send-keys', '-t', 'pk', 'Down');
  await waitFor('pk', PICK('1\\. Allow once'));
  tmux('send-keys', '-t', 'pk', 'Up');
  await waitFor('pk', PICK('3\\. Deny'));
  tmux('send-keys', '-t', 'pk', 'Up');
  await waitFor('pk', PICK('2\\. Allow for this session'));
  tmux('send-keys', '-t', 'pk', 'Enter');
  text = await waitFor('pk', new RegExp(`\\n› 2\\n[\\s\\S]*Said it\\.\\n[\\d,]+ in · [\\d,]+ out tokens${IDLE}`));
  show(t, 'keys-picked.txt', text);
  t.same(ran, ['hi'], 'the call ran: "Allow for this session" was picked');
  t.notMatch(text, /❯/, 'the picker is gone once answered');
  tmux('send-keys', '-t', 'pk', '/exit', 'Enter');
});

t.test('/rewind is an arrow-key picker, newest first: Esc leaves it, Enter rewinds and gives the message back', async (t) => {
  if (!needTmux(t)) return;
  const { app, model } = await started(t, 'rw');
  model.script({ text: ['First answer.'] }, { text: ['Second answer.'] });
  tmux('send-keys', '-t', 'rw', 'the first message', 'Enter');
  await waitFor('rw', new RegExp(`First answer\\.\\n[^\\n]*tokens${IDLE}`));
  tmux('send-keys', '-t', 'rw', 'the second message', 'Enter');
  await waitFor('rw', new RegExp(`Second answer\\.\\n[^\\n]*tokens${IDLE}`));
  const PICK = (line: string) => new RegExp(`\\n {2}rewind to which\\? \\(1-2, ↑↓ and Enter; Esc stays here\\)\\n❯ ${line} {2}↑↓ to choose, Enter to pick, Esc to leave it \\(or type\\)${IDLE}`);
  tmux('send-keys', '-t', 'rw', '/rewind', 'Enter');
  let text = await waitFor('rw', PICK('1\\. before “the second message”'));
  show(t, 'keys-rewind-picker.txt', text);
  t.match(text, /\n {2}1\. before “the second message” · [\d-]+ [\d:]+ · \d+ files · cp_\w+\n {2}2\. before “the first message” · /, 'newest first, by the message each was taken before');
  tmux('send-keys', '-t', 'rw', 'Escape');
  text = await waitFor('rw', new RegExp(`\\nnot rewound${IDLE}`));
  t.notMatch(text, /❯/, 'Esc left the picker');
  tmux('send-keys', '-t', 'rw', '/rewind', 'Enter');
  await waitFor('rw', PICK('1\\. before “the second message”'));
  tmux('send-keys', '-t', 'rw', 'Down');
  await waitFor('rw', PICK('2\\. before “the first message”'));
  tmux('send-keys', '-t', 'rw', 'Enter');
  text = await waitFor('rw', /(^|\n)rewound to cp_\w+: 4 turns moved to another branch, 0 files restored\nyour message is back in the editor\n─+\nthe first message *\n─+$/);
  show(t, 'keys-rewound.txt', text);
  t.notMatch(text, /First answer|Second answer/, 'the screen shows the branch as it now is');
  const sid = (await (await app.api('/api/sessions')).json()).items[0].id;
  const turns = (await (await app.api(`/api/sessions/${sid}/messages`)).json()) as unknown[];
  t.equal(turns.length, 0, 'rewound to before the first message: the branch is empty (its 4 turns moved)');
  tmux('send-keys', '-t', 'rw', 'C-c');
  tmux('send-keys', '-t', 'rw', '/exit', 'Enter');
});
