import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { artifact, cli, tmuxMissing, startCli, tmuxServer } from '../terminal/helpers.js';
import type { TestApp } from '../helpers/app.js';

const noTmux = tmuxMissing(t);

// `agentsvc inbox` (docs/inbox.md): lists what waits; --answer answers one; on a terminal, the
// chat's arrow-key picker chooses the item and the answer.

const POLICY = JSON.stringify({ default: 'allow', rules: [{ tool: 'Echo', pattern: '*secret*', action: 'ask' }] });
const QUESTION = { questions: [{ question: 'Which branch?', options: [{ label: 'main' }, { label: 'dev' }] }] };

async function waiting(app: TestApp, model: Awaited<ReturnType<typeof buildWithModel>>['model'], intent: string, call: { name: string; args: object }) {
  const sid = await createSession(app, app.adminKey, { intent });
  const w = await watch(app, sid);
  model.script({ toolCalls: [call] });
  await request(w.sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(w.seen, sid);
  return sid;
}

t.test('agentsvc inbox --list / --json / --answer, by direct invocation', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  await waiting(app, model, 'Deploy the site', { name: 'Echo', args: { say: 'secret deploy' } });
  const qsid = await waiting(app, model, 'Pick a branch', { name: 'AskUserQuestion', args: QUESTION });
  const list = await cli(['inbox', '--list'], env);
  t.equal(list.code, 0, list.stderr);
  const lines = list.stdout.trim().split('\n');
  t.equal(lines.length, 2);
  t.match(lines[0], /^1\. +\d+s approval Deploy the site · Allow Echo .*secret deploy/);
  t.match(lines[1], /^2\. +\d+s question Pick a branch · Which branch\?$/);
  const json = JSON.parse((await cli(['inbox', '--json'], env)).stdout);
  t.equal(json.total, 2);

  const bad = await cli(['inbox', '--answer', 'tc_nope', '--choice', '1'], env);
  t.equal(bad.code, 1);
  t.equal(bad.stderr.trim(), 'agentsvc: nothing in your inbox with tool_call_id tc_nope');

  model.script({ text: ['done'] });
  const approval = json.items[0].tool_call_id;
  const ok = await cli(['inbox', '--answer', approval, '--choice', '1'], env);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, `answered approval ${approval} in session`);
  await waitFor(() => ran.length === 1, { what: 'the approved call ran' });
  t.same(ran, ['secret deploy']);
  const left = JSON.parse((await cli(['inbox', '--json'], env)).stdout);
  t.match(left, { total: 1, items: [{ session_id: qsid, kind: 'question' }] }, 'the question is left');
});

t.test('agentsvc inbox on a terminal: the arrow-key picker chooses the item and the answer', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const { tmux, waitFor: screenFor, kill } = tmuxServer(`agentsvc-inbox-${process.pid}`);
  t.teardown(kill);
  const sid = await waiting(app, model, 'Pick a branch', { name: 'AskUserQuestion', args: QUESTION });
  startCli(tmux, 'inbox', { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, ['inbox']);
  let text = await screenFor('inbox', /❯ 1\. Pick a branch · Which branch\?/);
  t.match(text, /Inbox: 1 waiting\n1\. +\d+s question Pick a branch · Which branch\?/);
  tmux('send-keys', '-t', 'inbox', 'Enter');
  text = await screenFor('inbox', /❯ 1\. main/);
  t.match(text, /\? Which branch\?\n {2}1\. main\n {2}2\. dev/);
  model.script({ text: ['on dev'] });
  tmux('send-keys', '-t', 'inbox', 'Down');
  await screenFor('inbox', /❯ 2\. dev/);
  tmux('send-keys', '-t', 'inbox', 'Enter');
  text = await screenFor('inbox', /\[exit 0\]/);
  artifact('inbox.txt', text);
  t.match(text, /› 2\n {2}answered; the session goes on\n[\s\S]*\nnothing waits for you\n1 answered\n\[exit 0\]$/);
  await waitFor(async () => (await (await app.api(`/api/sessions/${sid}`)).json()).status === 'completed', { what: 'the answer ran' });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.match(msgs[1].tool_calls[0], { status: 'done', result: /dev/ });
});
