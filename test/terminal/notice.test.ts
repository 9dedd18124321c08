import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { artifact, startCli, tmuxMissing, tmuxServer } from './helpers.js';

/**
 * A budget warning in the interactive `agentsvc chat`, in tmux as a person sees it: the service sends
 * `system:notice` BUDGET_WARNING once a budget passes 80%, and the client prints it on a line of its
 * own (before issue #41 it dropped the event). Screen in test/artifacts/terminal/notice.txt.
 */

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-notice-${process.pid}`);
t.teardown(kill);
const IDLE = '\\n─+\\n\\n─+$';

t.test('a budget past 80% is a visible notice line; the run goes on to its answer', async (t) => {
  if (tmuxMissing(t)) return;

  // The install budget covers the session the first message makes.
  const { app, model } = await buildWithModel(t, { AGENTSVC_BUDGETS: JSON.stringify([{ period: 'month', max_tokens: 100 }]), AGENTSVC_TIMEZONE: 'UTC' });
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url, NO_COLOR: '' };
  startCli(tmux, 'n', env, ['chat'], { columns: 160, rows: 30 });
  await waitFor('n', /new session \(made by your first message\)/);
  model.script({ text: ['Counted ', 'them.'], usage: { prompt_tokens: 70, completion_tokens: 15 } });
  tmux('send-keys', '-t', 'n', 'count them', 'Enter');
  const text = await waitFor('n', new RegExp(`70 in · 15 out tokens${IDLE}`));
  artifact('notice.txt', text);
  t.match(
    text,
    /\nCounted them\.\nnotice: the install budget \(per month: 85 of 100 tokens\) is past 80%; it resets at \d{4}-\d{2}-01T00:00:00\.000Z\n70 in · 15 out tokens\n/,
    'the answer, then the warning as the service worded it on a line of its own, then the tokens',
  );
  tmux('send-keys', '-t', 'n', '/exit', 'Enter');
});
