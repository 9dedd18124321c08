import t from 'tap';
import { buildWithModel, echoTool } from '../helpers/chat.js';
import { artifact, tmuxMissing, startCli, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * A policy approval (issue 28, docs/policy.md) in the interactive client under tmux: shown like a
 * question (the tool, its arguments, the rule that asked, three options), answered by number;
 * "3 reason" denies with the reason. Screens in test/artifacts/terminal/.
 */

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-approval-${process.pid}`);
t.teardown(kill);
// The arrow-key picker's line (a question or an approval waiting) may sit above the editor.
const IDLE = '(\\n❯ [^\\n]*)?\\n─+\\n\\n─+$';
const idle = (before: string) => new RegExp(`${before}${IDLE}`, 's');
const MENU = (say: string) =>
  `\\? Allow Echo\\?\\n {2}arguments: \\{"say":"${say}"\\}\\n {2}rule: ask \\* \\(install\\)\\n {2}1\\. Allow once\\n {2}2\\. Allow for this session\\n {2}3\\. Deny\\n {2}choose 1-3 \\(3 may be followed by a reason: "3 not on main"\\)`;

t.test('an approval is a menu: Allow once runs the call, "3 reason" denies it with the reason', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ default: 'ask', rules: [] }) });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  startCli(tmux, 'chat', { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, ['chat'], { columns: 110, rows: 40 });
  await waitFor('chat', idle('new session \\(made by your first message\\)[^\\n]*'));

  model.script({ text: ['Pushing.'], toolCalls: [{ name: 'Echo', args: { say: 'git push origin main' } }] }, { text: ['Pushed.'] });
  tmux('send-keys', '-t', 'chat', 'push it', 'Enter');
  let text = await waitFor('chat', idle(MENU('git push origin main')));
  artifact('approval-menu.txt', text);
  t.same(ran, [], 'nothing ran before the answer');
  tmux('send-keys', '-t', 'chat', '4', 'Enter');
  await waitFor('chat', idle('› 4\\n {2}choose 1, 2 or 3'));
  tmux('send-keys', '-t', 'chat', '1', 'Enter');
  text = await waitFor('chat', idle('Pushed\\.\\n[\\d,]+ in · [\\d,]+ out tokens'));
  artifact('approval-allowed.txt', text);
  t.same(ran, ['git push origin main'], 'Allow once ran the call');

  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'rm -rf build' } }] }, { text: ['Not deleting then.'] });
  tmux('send-keys', '-t', 'chat', 'clean up', 'Enter');
  await waitFor('chat', idle(MENU('rm -rf build')));
  tmux('send-keys', '-t', 'chat', '3 not the build folder', 'Enter');
  text = await waitFor('chat', idle('Not deleting then\\.\\n[\\d,]+ in · [\\d,]+ out tokens'));
  artifact('approval-denied.txt', text);
  t.same(ran, ['git push origin main'], 'Deny did not run it');
  const toolMessage = JSON.stringify(model.requests.at(-1));
  t.match(toolMessage, /not the build folder/, 'the model was told the reason');
  tmux('send-keys', '-t', 'chat', '/exit', 'Enter');
  await waitFor('chat', /\[exit 0\]/);
});
