import t, { type Test } from 'tap';
import { buildWithModel, echoTool } from '../helpers/chat.js';
import { waitFor as waitUntil } from '../helpers/wait.js';
import { artifact, startCli, tmuxMissing, tmuxServer } from './helpers.js';

/**
 * Interrupting in the interactive `agentsvc chat`, under tmux with the fake model (issue #42;
 * docs/terminal-keys.md): Esc stops a run and puts the queued messages back in the editor unsent;
 * Ctrl-C clears a draft, stops a run on an empty editor, and exits on a second press within a
 * second on an empty, idle one; Ctrl-D during a run exits printing what was queued and how to
 * resume; an approval is an arrow-key picker; Ctrl-O shows the last folded tool output whole. Screens in test/artifacts/terminal/keys-*.txt (each test prints its capture as comments).
 */

const { tmux, screen, waitFor, kill } = tmuxServer(`agentsvc-keys-${process.pid}`);
t.teardown(kill);
/** The empty editor at the bottom of the screen. */
const IDLE = '\\n─+\\n\\n─+$';
/** An answer that streams for 9 s unless stopped. */
const SLOW = { text: Array.from({ length: 60 }, (_, i) => `tick${i} `), delayMs: 150 };

const needTmux = (t: Test) => !tmuxMissing(t);


const show = (t: Test, name: string, text: string) => {
  artifact(name, text);
  for (const l of text.split('\n')) t.comment(`| ${l}`);
};

async function started(t: Test, name: string, env: Record<string, string> = {}) {
  const { app, model } = await buildWithModel(t, env);
  startCli(tmux, name, { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url, NO_COLOR: '1' }, ['chat'], { columns: 100, rows: 30 });
  await waitFor(name, new RegExp(`new session \\(made by your first message\\)[^\\n]*${IDLE}`));
  return { app, model };
}

/** Wait until the screen no longer matches; the screen then. */
const waitGone = (name: string, re: RegExp, timeoutMs = 10_000): Promise<string> =>
  waitUntil(
    () => {
      const text = screen(name);
      return re.test(text) ? null : text;
    },
    { timeoutMs, everyMs: 50, what: `the screen of ${name} to stop matching ${re}` },
  );

t.test('Esc during a run stops it and returns the queued messages to the editor, unsent', async (t) => {
  if (!needTmux(t)) return;
  const { app, model } = await started(t, 'esc');
  model.script(SLOW);
  tmux('send-keys', '-t', 'esc', 'count slowly', 'Enter');
  await waitFor('esc', /tick3 /);
  tmux('send-keys', '-t', 'esc', 'first queued', 'Enter');
  tmux('send-keys', '-t', 'esc', 'second queued', 'Enter');
  await waitFor('esc', /queued › first queued\nqueued › second queued\n/);
  const calls = model.requests.length;
  tmux('send-keys', '-t', 'esc', 'Escape');
  const text = await waitFor('esc', /\[chat interrupted: interrupted\][\s\S]*\n─+\nfirst queued *\nsecond queued *\n─+$/);
  show(t, 'keys-esc.txt', text);
  t.match(text, /\n\[stopping… 2 queued messages back in the editor\]\n/);
  t.notMatch(text, /tick59/, 'the answer was cut short');
  t.notMatch(text, /queued ›/, 'nothing is shown as queued any more');
  t.notMatch(text, /› first queued/, 'the queued text was not sent');
  t.equal(model.requests.length, calls, 'no new model call: the queue did not become runs');
  const sid = /session (sess_\w+) \(new\)/.exec(text)![1];
  const turns = (await (await app.api(`/api/sessions/${sid}/messages`)).json()) as { role: string }[];
  t.equal(turns.filter((x) => x.role === 'user').length, 1, 'one user message stored: the queue was not sent');
  // Enter sends what came back, as one message.
  model.script({ text: ['Got both.'] });
  tmux('send-keys', '-t', 'esc', 'Enter');
  await waitFor('esc', new RegExp(`Got both\\.\\n[\\d,]+ in · [\\d,]+ out tokens${IDLE}`));
  t.match(JSON.stringify(model.requests.at(-1).messages.at(-1)), /first queued\\nsecond queued/);
  tmux('send-keys', '-t', 'esc', '/exit', 'Enter');
});

t.test('Ctrl-C clears a draft; on an empty editor during a run it stops the run', async (t) => {
  if (!needTmux(t)) return;
  const { model } = await started(t, 'cc');
  tmux('send-keys', '-t', 'cc', 'a draft I typed');
  await waitFor('cc', /\n─+\na draft I typed *\n─+$/);
  tmux('send-keys', '-t', 'cc', 'C-c');
  let text = await waitFor('cc', new RegExp(`made by your first message[^\\n]*${IDLE}`));
  show(t, 'keys-ctrl-c-draft.txt', text);
  t.notMatch(text, /a draft I typed|Press Ctrl-C again/, 'the draft is gone and exit is not armed');
  // The cleared draft is in the history: ↑ brings it back.
  tmux('send-keys', '-t', 'cc', 'Up');
  await waitFor('cc', /\n─+\na draft I typed *\n─+$/);
  tmux('send-keys', '-t', 'cc', 'C-c');
  await waitFor('cc', new RegExp(`made by your first message[^\\n]*${IDLE}`));

  model.script(SLOW);
  tmux('send-keys', '-t', 'cc', 'count slowly', 'Enter');
  await waitFor('cc', /tick3 /);
  tmux('send-keys', '-t', 'cc', 'C-c');
  // After a stop the usage line counts what streamed (docs/socket-protocol.md).
  text = await waitFor('cc', new RegExp(`\\[stopping…\\]\\n[\\s\\S]*\\[chat interrupted: interrupted\\](\\n[^\\n]* tokens)?${IDLE}`));
  show(t, 'keys-ctrl-c-run.txt', text);
  t.notMatch(text, /tick59|\[exit/, 'the run was cut short and the client is still there');
  tmux('send-keys', '-t', 'cc', '/exit', 'Enter');
});

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
