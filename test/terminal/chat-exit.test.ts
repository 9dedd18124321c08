import t from 'tap';
import { buildWithModel, echoTool } from '../helpers/chat.js';
import { cli } from './helpers.js';

/**
 * `agentsvc chat -m` exit codes (issue #42): 0 only when the run completed; 3 when it ends waiting
 * for an answer (a question or a policy approval), with one stderr line saying what waits and how
 * to answer; 1 otherwise. Before, a run paused on an approval exited 0 like a finished one.
 */

t.test('chat -m: an approval pending exits 3 with one line; --json says which; a finished run exits 0', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ default: 'ask', rules: [] }) });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };

  model.script({ text: ['Pushing.'], toolCalls: [{ name: 'Echo', args: { say: 'git push' } }] });
  const r = await cli(['chat', '-m', 'push it'], env);
  t.equal(r.code, 3, r.stderr);
  const sid = /agentsvc: session (sess_\w+)/.exec(r.stderr)![1];
  t.same(r.stderr.trimEnd().split('\n'), [`agentsvc: session ${sid}`, `agentsvc: a call of Echo waits for your approval; answer it with: agentsvc chat ${sid}`]);
  t.same(ran, [], 'nothing ran');

  // --json: the same exit code, and the payload names what waits.
  model.script({ text: ['Again.'], toolCalls: [{ name: 'Echo', args: { say: 'git push' } }] });
  const j = await cli(['chat', '-m', 'push it', '--json'], env);
  t.equal(j.code, 3, j.stderr);
  const end = JSON.parse(j.stdout);
  t.match(end, { status: 'completed', finish_reason: 'tool_approval', waiting: 'approval', approval: { tool_name: 'Echo' } });

  // A question: exit 3 and its text.
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which   color?', options: [{ label: 'red' }, { label: 'blue' }] }] } }] });
  const q = await cli(['chat', '-m', 'pick', '--json'], env);
  t.equal(q.code, 3, q.stderr);
  t.match(JSON.parse(q.stdout), { finish_reason: 'tool_question', waiting: 'question' });

  // A run that completes (no tool call to approve): exit 0, nothing about waiting.
  model.script({ text: ['Done.'] });
  const ok = await cli(['chat', '-m', 'hi', '--json'], env);
  t.equal(ok.code, 0, ok.stderr);
  t.notOk('waiting' in JSON.parse(ok.stdout), 'no waiting field when nothing waits');
});
