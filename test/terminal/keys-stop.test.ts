import t from 'tap';
import { keysTerminal, IDLE, SLOW } from './keys-helpers.js';

/**
 * Stopping a run in the interactive `agentsvc chat`, under tmux with the fake model (issue #42;
 * docs/terminal-keys.md): Esc stops a run and puts the queued messages back in the editor unsent;
 * Ctrl-C clears a draft and stops a run on an empty editor. Screens in
 * test/artifacts/terminal/keys-*.txt (each test prints its capture as comments).
 */

const { tmux, waitFor, show, started, needTmux } = keysTerminal('keys-stop');

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
