import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { artifact, tmuxMissing, startCli, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * In tmux, as a person sees them (issue 31): an Edit and a Write shown as a coloured diff (long
 * ones cut), the tokens (and cost) line after each answer, and /resume picking a recent session
 * by number and continuing it. Screens in test/artifacts/terminal/.
 */

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-edits-${process.pid}`);
t.teardown(kill);
const IDLE = '\\n─+\\n\\n─+$';

const start = (name: string, env: Record<string, string>, args: string[]) => startCli(tmux, name, env, args, { columns: 100, rows: 60 });

t.test('Edit and Write as diffs, tokens after each answer, /resume', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url, NO_COLOR: '' };
  start('ed', env, ['chat']);
  await waitFor('ed', /new session \(made by your first message\)/);

  // A Write of 40 lines, then an Edit of two of them.
  const content = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join('\n');
  model.script(
    { toolCalls: [{ name: 'Write', args: { file_path: 'notes.txt', content } }], usage: { prompt_tokens: 1200, completion_tokens: 30 } },
    { toolCalls: [{ name: 'Edit', args: { file_path: 'notes.txt', old_string: 'line 3\nline 4\nline 5\nline 6\nline 7', new_string: 'line 3\nline four\nline 5\nline 6\nline 7\nline 7b' } }], usage: { prompt_tokens: 1300, completion_tokens: 40 } },
    { text: ['Wrote and edited notes.txt.'], usage: { prompt_tokens: 1400, completion_tokens: 12 } },
  );
  tmux('send-keys', '-t', 'ed', 'write the notes', 'Enter');
  let text = await waitFor('ed', new RegExp(`Wrote and edited notes\\.txt\\.\\n[^\\n]*tokens[^\\n]*${IDLE}`));
  artifact('edit-write-diff.txt', text);
  t.match(text, /● Write\(notes\.txt\)\n {2}└ done( \d+ms)? · Created notes\.txt \(\d+ bytes\) · \+40 -0\n {4}\+line 1\n {4}\+line 2\n(?: {4}\+line \d+\n){10} {4}… \+28 more lines\n/, 'the Write: its lines as additions, cut with a count');
  t.match(
    text,
    /● Edit\(notes\.txt\)\n {2}└ done( \d+ms)? · Edited notes\.txt: 1 replacement\(s\) · \+2 -1\n {4} line 3\n {4}-line 4\n {4}\+line four\n {4} line 5\n {4} line 6\n {4} line 7\n {4}\+line 7b\n/,
    'the Edit: a line diff with context',
  );
  t.match(text, /Wrote and edited notes\.txt\.\n3,900 in · 82 out tokens\n/, 'the run\'s tokens, summed over its model calls');
  const colored = tmux('capture-pane', '-p', '-e', '-t', 'ed');
  const esc = String.fromCharCode(27);
  t.match(colored, new RegExp(`${esc}\\[32m\\+line four`), 'additions green');
  t.match(colored, new RegExp(`${esc}\\[31m-line 4`), 'removals red');
  t.equal((await (await app.api(`/api/sessions/${/session (sess_\w+)/.exec(text)![1]}/files/notes.txt`)).text()).split('\n')[3], 'line four', 'the edit happened');

  // A second session, then /resume picks the first one back by number.
  tmux('send-keys', '-t', 'ed', '/clear', 'Enter');
  await waitFor('ed', /new session: created by your first message/);
  model.script({ text: ['Other answer.'] });
  tmux('send-keys', '-t', 'ed', 'another topic', 'Enter');
  await waitFor('ed', new RegExp(`Other answer\\.\\n10 in · 5 out tokens${IDLE}`));
  // A picker (issue #42): ↑↓ and Enter, a typed number still answers, Esc stays here.
  const PICKER = `resume which\\? \\(1-1, ↑↓ and Enter; Esc stays here\\)\\n❯ 1\\. write the notes {2}↑↓ to choose, Enter to pick, Esc to leave it \\(or type\\)${IDLE}`;
  tmux('send-keys', '-t', 'ed', '/resume', 'Enter');
  text = await waitFor('ed', new RegExp(PICKER));
  artifact('resume-menu.txt', text);
  t.match(text, /› \/resume\n {2}1\. write the notes · (just now|\d+ min ago) · completed · sess_\w+\n/, 'the other session, by its title; not the current one');
  tmux('send-keys', '-t', 'ed', '5', 'Enter');
  await waitFor('ed', /5 is not one of 1-1; \/resume lists them again/);
  tmux('send-keys', '-t', 'ed', '/resume', 'Enter');
  await waitFor('ed', new RegExp(`› /resume[\\s\\S]*› /resume\\n[\\s\\S]*${PICKER}`));
  tmux('send-keys', '-t', 'ed', 'Escape');
  await waitFor('ed', new RegExp(`\\nstaying in this session${IDLE}`));
  tmux('send-keys', '-t', 'ed', '/resume', 'Enter');
  await waitFor('ed', new RegExp(`staying in this session\\n› /resume\\n[\\s\\S]*${PICKER}`));
  tmux('send-keys', '-t', 'ed', 'Enter');
  text = await waitFor('ed', new RegExp(`resumed${IDLE}`));
  artifact('resumed.txt', text);
  t.match(text, /^> write the notes\n● Write\(notes\.txt\)\n[\s\S]*\+line four[\s\S]*Wrote and edited notes\.txt\.\nsession sess_\w+ · write the notes · resumed/, 'the screen starts over with its conversation, diffs included');
  t.notMatch(text, /another topic/);
  model.script({ text: ['Back in the notes session.'] });
  tmux('send-keys', '-t', 'ed', 'and now?', 'Enter');
  await waitFor('ed', /Back in the notes session\./);
  const sessions = (await (await app.api('/api/sessions')).json()).items;
  const notes = sessions.find((x: { intent: string }) => x.intent === 'write the notes');
  const turns = await (await app.api(`/api/sessions/${notes.id}/messages`)).json();
  t.equal(turns.filter((x: { role: string }) => x.role === 'user').at(-1).blocks[0].content, 'and now?', 'the message went to the resumed session');
  t.equal(sessions.length, 2, 'no session made by resuming');

  tmux('send-keys', '-t', 'ed', '/resume sess_nope', 'Enter');
  await waitFor('ed', /\/resume: session sess_nope not found/);
  tmux('send-keys', '-t', 'ed', 'C-d');
  await waitFor('ed', /\[exit 0\]/);
});
