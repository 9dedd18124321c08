import t from 'tap';
import { buildWithModel, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/** Issues worked by agents (docs/solutions-and-admin.md): assignment starts a task run; status, usage and answer show on the issue. */



t.test('an issue assigned to an agent: task run, usage, final answer, timeline', async (t) => {
  const { app, model } = await buildWithModel(t);
  const bob = await app.newUser('bob');
  const mal = await app.newUser('mallory');
  const post = (path: string, json: unknown, key = app.adminKey) => app.api(path, { method: 'POST', json, key });
  const agent = await (await post('/api/prod_agents', { name: 'Fixer bot', solution_id: 'code-reviewer', biz_role_id: 'fixer', instructions: 'Fix what the issue says.' })).json();
  t.match(agent, { record_id: /^agent_/ });
  const bobAgent = await (await post('/api/prod_agents', { name: 'Bob bot', solution_id: 'code-reviewer', biz_role_id: 'fixer' }, bob.key)).json();
  const ws = await (await post('/api/prod_workspaces', { name: 'Web' })).json();
  const w = `/api/prod_workspaces/${ws.id}`;
  await post(`${w}/members`, { user_id: bob.userId });

  t.equal((await post(`${w}/agents`, { agent_id: bobAgent.record_id })).status, 404, "another user's agent");
  t.equal((await post(`${w}/agents`, { agent_id: agent.record_id }, mal.key)).status, 404, 'a non-member');
  t.equal((await post(`${w}/agents`, { agent_id: '' })).status, 422);
  const added = await post(`${w}/agents`, { agent_id: agent.record_id });
  t.equal(added.status, 200);
  t.match((await added.json()).items, [{ agent_id: agent.record_id, name: 'Fixer bot', agent: { record_id: agent.record_id, name: 'Fixer bot' } }]);
  t.equal((await post(`${w}/agents`, { agent_id: agent.record_id })).status, 409, 'added once');
  const listed = await (await app.api(`${w}/agents`, { key: bob.key })).json();
  t.equal(listed.items.length, 1, 'members see the agents');
  t.notOk('init_script' in listed.items[0].agent, "the agent's init_script is not shown to members");

  const issue = await (await post(`${w}/issues`, { title: 'Fix the login redirect', description: 'After login users land on /404 instead of /home.', priority: 'high', status: 'todo' }, bob.key)).json();
  model.script(
    { text: ['Looking at the router.'], toolCalls: [{ name: 'Write', args: { file_path: 'fix.md', content: 'redirect to /home' } }], usage: { prompt_tokens: 120, completion_tokens: 30 } },
    { text: ['Fixed: the login handler now redirects to /home; see fix.md.'], usage: { prompt_tokens: 200, completion_tokens: 40 } },
  );
  // Only the agent's owner assigns it (docs/solutions-and-admin.md): a run works in its owner's computer.
  const byBob = await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_type: 'agent', assignee_id: agent.record_id }, key: bob.key });
  t.equal(byBob.status, 404, "bob assigns the admin's agent");
  t.equal((await (await app.api(`${w}/issues/${issue.id}`)).json()).assignee_id, null, 'nothing changed');
  const assign = await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_type: 'agent', assignee_id: agent.record_id } });
  t.equal(assign.status, 200);
  t.match(await assign.json(), { assignee_type: 'agent', assignee_id: agent.record_id, status: 'in_progress' });

  const runsOf = async () => (await (await app.api(`${w}/issues/${issue.id}/task-runs`, { key: bob.key })).json()).items;
  let runs = await runsOf();
  t.equal(runs.length, 1);
  t.match(runs[0].status, /^(starting|running|completed)$/);
  const finished = (r: { status: string } | undefined) => r?.status === 'completed' || r?.status === 'failed';
  await waitFor(async () => finished((runs = await runsOf())[0]), { timeoutMs: 60_000, everyMs: 200, what: 'the task run to finish' }).catch(() => {}); // asserted below
  const run = runs[0];
  t.match(run, {
    id: /^irun_/,
    issue_id: issue.id,
    agent_id: agent.record_id,
    session_id: /^sess_/,
    status: 'completed',
    final_answer: 'Fixed: the login handler now redirects to /home; see fix.md.',
    error: null,
    input_tokens: 320,
    output_tokens: 70,
  });
  t.ok(Date.parse(run.finished_at) >= Date.parse(run.started_at ?? run.created_at), 'finished after it started');
  t.comment(`task run: ${JSON.stringify(run)}`);

  // The agent worked the issue in a session of its owner, configured from the agent.
  const prompt = model.requests[0].messages.at(-1).content as string;
  t.match(prompt, /issue #1 of the team workspace "Web": Fix the login redirect/);
  t.match(prompt, /After login users land on \/404/);
  t.match(JSON.stringify(model.requests[0].messages[0]), /Fix what the issue says/, "the agent's instructions are in its system prompt");
  const session = await (await app.api(`/api/sessions/${run.session_id}`)).json();
  t.match(session, { workspace_id: ws.id, solution_id: 'code-reviewer', biz_role_id: 'fixer', status: 'completed', intent: '#1 Fix the login redirect' });
  t.equal(await (await app.api(`/api/sessions/${run.session_id}/files/fix.md`)).text(), 'redirect to /home');

  const usage = await (await app.api(`${w}/issues/${issue.id}/usage`, { key: bob.key })).json();
  t.same(usage, {
    issue_id: issue.id,
    runs: 1,
    input_tokens: 320,
    output_tokens: 70,
    total_tokens: 390,
    items: [{ run_id: run.id, agent_id: agent.record_id, session_id: run.session_id, status: 'completed', input_tokens: 320, output_tokens: 70 }],
  });
  const timeline = (await (await app.api(`${w}/issues/${issue.id}/timeline`)).json()).items;
  const shape = timeline.map((e: any) => `${e.kind}${e.field ? `:${e.field}=${e.to}` : ''}/${e.actor_type}`);
  t.same(shape, [
    'created/member',
    `updated:assignee_type=agent/member`,
    `updated:assignee_id=${agent.record_id}/member`,
    'task_run_started/agent',
    'updated:status=in_progress/agent',
    'task_run_finished/agent',
    'agent_answer/agent',
    'updated:status=in_review/agent',
  ]);
  t.match(timeline.find((e: any) => e.kind === 'agent_answer'), { actor_id: agent.record_id, data: { run_id: run.id, text: run.final_answer } });
  t.match(timeline.find((e: any) => e.kind === 'task_run_finished'), { data: { status: 'completed', input_tokens: 320, output_tokens: 70, session_id: run.session_id } });
  t.comment(`timeline: ${shape.join(' -> ')}`);
  t.equal((await app.api(`${w}/issues/${issue.id}`)).status, 200);
  t.equal((await (await app.api(`${w}/issues/${issue.id}`)).json()).status, 'in_review');
  for (const p of ['task-runs', 'usage', 'timeline']) t.equal((await app.api(`${w}/issues/${issue.id}/${p}`, { key: mal.key })).status, 404, `non-member ${p}`);

  // A run whose model fails: the run fails with the reason; the issue stays in progress.
  model.script({ status: 400 });
  const broken = await (await post(`${w}/issues`, { title: 'Doomed', assignee_type: 'agent', assignee_id: agent.record_id })).json();
  t.equal(broken.status, 'in_progress', 'assigned at creation: the run starts at once');
  let bad: any[] = [];
  await waitFor(async () => finished((bad = (await (await app.api(`${w}/issues/${broken.id}/task-runs`)).json()).items)[0]), { timeoutMs: 60_000, everyMs: 200, what: 'the failing run to finish' }).catch(() => {}); // asserted below
  t.match(bad, [{ status: 'failed', error: /.+/, final_answer: null }]);
  const kinds = (await (await app.api(`${w}/issues/${broken.id}/timeline`)).json()).items.map((e: any) => e.kind);
  t.ok(kinds.includes('task_run_finished') && !kinds.includes('agent_answer'), 'a failed run has no answer');
  t.equal((await (await app.api(`${w}/issues/${broken.id}`)).json()).status, 'in_progress');

  // Reassigning to a member starts nothing; the workspace's agent can be removed by its owner only.
  await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_id: bob.userId, assignee_type: 'member' } });
  t.equal((await runsOf()).length, 1);
  t.equal((await app.api(`${w}/agents/${agent.record_id}`, { method: 'DELETE', key: bob.key })).status, 403);
  t.equal((await app.api(`${w}/agents/${agent.record_id}`, { method: 'DELETE' })).status, 200);
  t.equal((await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_type: 'agent', assignee_id: agent.record_id }, key: bob.key })).status, 404, 'never the agent of another');
});

t.test('task runs follow a question and survive the death of their node', async (t) => {
  const { app, model } = await buildWithModel(t);
  const post = (path: string, json: unknown) => app.api(path, { method: 'POST', json });
  const agent = await (await post('/api/prod_agents', { name: 'Asker', solution_id: 'code-reviewer', biz_role_id: 'fixer' })).json();
  const ws = await (await post('/api/prod_workspaces', { name: 'Ops' })).json();
  const w = `/api/prod_workspaces/${ws.id}`;
  const until = async (issueId: string, ok: (r: any) => boolean) =>
    waitFor(
      async () => {
        const runs = (await (await app.api(`${w}/issues/${issueId}/task-runs`)).json()).items;
        return runs[0] && ok(runs[0]) && runs[0];
      },
      { timeoutMs: 60_000, everyMs: 200, what: `the run of ${issueId} in the awaited state` },
    );


  // The agent asks its owner a question: the run waits, then goes on once answered.
  model.script(
    { toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which region?', options: [{ label: 'eu' }, { label: 'us' }] }] } }] },
    { text: ['Rotated the keys in eu.'] },
  );
  t.same((await (await app.api(`${w}/agents`)).json()).items, [], 'no agent yet');
  const asked = await (await post(`${w}/issues`, { title: 'Rotate keys', assignee_type: 'agent', assignee_id: agent.record_id })).json();
  t.match((await (await app.api(`${w}/agents`)).json()).items, [{ agent_id: agent.record_id, added_by: /^user_/ }], 'the agent joined on its first assignment');
  const waiting = await until(asked.id, (r) => r.status === 'waiting_for_input');
  t.equal(waiting.final_answer, null);
  const turns = (await (await app.api(`/api/sessions/${waiting.session_id}/messages`)).json()) as any[];
  const call = turns.flatMap((x) => x.tool_calls).find((c: any) => c.status === 'awaiting_answer');
  const { sock } = await watch(app, waiting.session_id);
  const ack = await request(sock, 'chat:send', { session_id: waiting.session_id, message: '', askuser_answer: { tool_call_id: call.id, selections: { 0: [0] } } });
  t.equal(ack.ok, true);
  const done = await until(asked.id, (r) => r.status === 'completed');
  t.equal(done.final_answer, 'Rotated the keys in eu.');
  sock.disconnect();

  // A run whose node dies: the next node's sweep settles it from its session.
  model.script({ hang: true });
  const hung = await (await post(`${w}/issues`, { title: 'Hangs', assignee_type: 'agent', assignee_id: agent.record_id })).json();
  const running = await until(hung.id, (r) => r.status === 'running');
  await app.restart();
  t.equal((await (await app.api(`/api/sessions/${running.session_id}`)).json()).status, 'interrupted', 'the shutdown interrupted the run');
  t.equal((await (await app.api(`${w}/issues/${hung.id}/task-runs`)).json()).items[0].status, 'running', 'no node follows it any more');
  await app.service.db.em().getConnection().execute(`update issue_task_runs set started_at = now() - interval '1 minute' where id = ?`, [running.id]);
  await app.service.teams.runs.sweep();
  const settled = (await (await app.api(`${w}/issues/${hung.id}/task-runs`)).json()).items[0];
  t.match(settled, { status: 'interrupted', error: 'the run ended interrupted', final_answer: null });
  const last = (await (await app.api(`${w}/issues/${hung.id}/timeline`)).json()).items.at(-1);
  t.match(last, { kind: 'task_run_finished', actor_type: 'agent', data: { status: 'interrupted' } });
  t.equal((await (await app.api(`${w}/issues/${hung.id}`)).json()).status, 'in_progress');
});
