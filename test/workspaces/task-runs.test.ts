import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';

/** Issues worked by agents (CONTRACT 13): assignment starts a task run; status, usage and answer show on the issue. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const assign = await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_type: 'agent', assignee_id: agent.record_id }, key: bob.key });
  t.equal(assign.status, 200);
  t.match(await assign.json(), { assignee_type: 'agent', assignee_id: agent.record_id, status: 'in_progress' });

  const runsOf = async () => (await (await app.api(`${w}/issues/${issue.id}/task-runs`, { key: bob.key })).json()).items;
  let runs = await runsOf();
  t.equal(runs.length, 1);
  t.match(runs[0].status, /^(starting|running|completed)$/);
  const t0 = Date.now();
  while (runs[0].status !== 'completed' && runs[0].status !== 'failed' && Date.now() - t0 < 60_000) {
    await sleep(200);
    runs = await runsOf();
  }
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
  t.ok(run.finished_at);
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
  let bad = (await (await app.api(`${w}/issues/${broken.id}/task-runs`)).json()).items;
  const t1 = Date.now();
  while (!['failed', 'completed'].includes(bad[0]?.status) && Date.now() - t1 < 60_000) {
    await sleep(200);
    bad = (await (await app.api(`${w}/issues/${broken.id}/task-runs`)).json()).items;
  }
  t.match(bad, [{ status: 'failed', error: /.+/, final_answer: null }]);
  const kinds = (await (await app.api(`${w}/issues/${broken.id}/timeline`)).json()).items.map((e: any) => e.kind);
  t.ok(kinds.includes('task_run_finished') && !kinds.includes('agent_answer'), 'a failed run has no answer');
  t.equal((await (await app.api(`${w}/issues/${broken.id}`)).json()).status, 'in_progress');

  // Reassigning to a member starts nothing; the workspace's agent can be removed by its owner only.
  await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_id: bob.userId, assignee_type: 'member' } });
  t.equal((await runsOf()).length, 1);
  t.equal((await app.api(`${w}/agents/${agent.record_id}`, { method: 'DELETE', key: bob.key })).status, 403);
  t.equal((await app.api(`${w}/agents/${agent.record_id}`, { method: 'DELETE' })).status, 200);
  t.equal((await app.api(`${w}/issues/${issue.id}`, { method: 'PUT', json: { assignee_type: 'agent', assignee_id: agent.record_id } })).status, 422, 'no longer an agent of the workspace');
});
