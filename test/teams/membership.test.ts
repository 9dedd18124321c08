import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

/**
 * A workspace's agents are those of its current members (docs/solutions-and-admin.md): an issue is assigned only
 * to an agent of the assigning member; a member who leaves takes their agents along and their
 * runs stop. The security review drove an ex-member's agent: the run worked in their computer
 * with their default env bucket, and the timeline showed their HOME and BOB_SECRET.
 */


// A shell expansion, not a template: the run's Bash tells what its computer holds.
// biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax
const ECHO = 'echo "HOME=$HOME SECRET=${BOB_SECRET:-none}"';

t.test('a member who leaves takes their agents along; their runs stop; nobody drives their computer', async (t) => {
  const { app, model } = await buildWithModel(t);
  const alice = await app.newUser('alice');
  const bob = await app.newUser('bob');
  const api = (path: string, key: string, method = 'GET', json?: unknown) => app.api(path, { method, json, key });
  t.equal((await api('/api/user/env-buckets/default', bob.key, 'PUT', { env: { BOB_SECRET: 'bob-secret-4711' } })).status, 200);
  const agentOf = async (key: string, name: string) => (await (await api('/api/prod_agents', key, 'POST', { name, solution_id: 'code-reviewer', biz_role_id: 'fixer' })).json()).record_id as string;
  const aliceAgent = await agentOf(alice.key, 'Alice bot');
  const bobAgent = await agentOf(bob.key, 'Bob bot');
  const ws = await (await api('/api/prod_workspaces', alice.key, 'POST', { name: 'Infra' })).json();
  const w = `/api/prod_workspaces/${ws.id}`;
  t.equal((await api(`${w}/members`, alice.key, 'POST', { user_id: bob.userId })).status, 200);
  const issue = async (key: string, title: string) => (await (await api(`${w}/issues`, key, 'POST', { title })).json()).id as string;
  const assign = (key: string, id: string, agent: string) => api(`${w}/issues/${id}`, key, 'PUT', { assignee_type: 'agent', assignee_id: agent });
  const runs = async (id: string) => (await (await api(`${w}/issues/${id}/task-runs`, alice.key)).json()).items;
  const until = async (id: string, ok: (r: any) => boolean) =>
    waitFor(
      async () => {
        const r = (await runs(id))[0];
        return r && ok(r) && r;
      },
      { timeoutMs: 60_000, everyMs: 100, what: `the run of ${id} in the awaited state` },
    ).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await runs(id))}`);
    });
  /** What the agent's Bash call saw, from the run's session (read with its owner's key). */
  const seen = async (sessionId: string, key: string) => {
    const turns = (await (await api(`/api/sessions/${sessionId}/messages`, key)).json()) as { tool_calls: { tool_name: string; result: string }[] }[];
    return turns.flatMap((x) => x.tool_calls).find((c) => c.tool_name === 'Bash')?.result as string;
  };
  const sessionsOf = async (key: string) => (await (await api('/api/sessions?limit=100', key)).json()).total as number;

  t.equal((await api(`${w}/agents`, bob.key, 'POST', { agent_id: bobAgent })).status, 200, 'bob brings his agent');

  // Bob's own agent on his issue works in his computer: the probe tells his HOME and secret.
  model.script({ toolCalls: [{ name: 'Bash', args: { command: ECHO } }] }, { text: ['probed'] });
  const first = await issue(bob.key, 'Probe');
  t.equal((await assign(bob.key, first, bobAgent)).status, 200);
  const probe = await until(first, (r) => r.status === 'completed');
  const bobSaw = await seen(probe.session_id, bob.key);
  t.match(bobSaw, /SECRET=bob-secret-4711/, "bob's run sees his bucket");
  const bobHome = /HOME=(\S+)/.exec(bobSaw)![1];
  t.match((await (await api(`${w}/agents`, alice.key)).json()).items, [{ agent_id: bobAgent, owner_id: bob.userId }]);

  // Alice cannot drive bob's agent, member or not: 404, nothing stored.
  const hers = await issue(alice.key, 'Rotate the keys');
  t.equal((await assign(alice.key, hers, bobAgent)).status, 404, "alice assigns bob's agent while bob is a member");
  t.match(await (await api(`${w}/issues/${hers}`, alice.key)).json(), { assignee_type: null, assignee_id: null });

  // A run of bob's is in progress when alice removes him: it stops, and his agent leaves.
  model.script({ hang: true });
  const long = await issue(bob.key, 'Long job');
  t.equal((await assign(bob.key, long, bobAgent)).status, 200);
  const running = await until(long, (r) => r.status === 'running');
  await waitFor(() => model.requests.length >= 3, { timeoutMs: 30_000, everyMs: 50, what: 'three model calls of the run' });
  t.equal((await api(`${w}/members/${bob.userId}`, alice.key, 'DELETE')).status, 200);
  const stopped = (await runs(long))[0];
  t.match(stopped, { status: 'interrupted', error: /left the workspace/, finished_at: /\d/ }, 'the run stopped with the removal');
  const session = await (await api(`/api/sessions/${running.session_id}`, bob.key)).json();
  t.not(session.status, 'running', 'its session is no longer running');
  t.same((await (await api(`${w}/agents`, alice.key)).json()).items, [], "bob's agent left with him");
  t.equal((await (await api(w, alice.key)).json()).agent_count, 0);
  const timeline = (await (await api(`${w}/issues/${long}/timeline`, alice.key)).json()).items;
  t.match(timeline.at(-1), { kind: 'task_run_finished', data: { status: 'interrupted' } });

  // After he left: assigning his agent is 404 and nothing runs in his computer.
  const bobSessions = await sessionsOf(bob.key);
  const calls = model.requests.length;
  t.equal((await assign(alice.key, hers, bobAgent)).status, 404, "alice assigns the ex-member's agent");
  t.same(await runs(hers), [], 'no task run');
  t.equal(await sessionsOf(bob.key), bobSessions, 'no session of bob was made');
  t.equal(model.requests.length, calls, 'no model call');
  t.equal((await api(`${w}/issues`, bob.key, 'POST', { title: 'x', assignee_type: 'agent', assignee_id: bobAgent })).status, 404, 'bob is no member any more');

  // Alice's own agent works in her computer: not bob's HOME, not his secret.
  model.script({ toolCalls: [{ name: 'Bash', args: { command: ECHO } }] }, { text: ['done'] });
  t.equal((await assign(alice.key, hers, aliceAgent)).status, 200);
  const done = await until(hers, (r) => r.status === 'completed');
  const aliceSaw = await seen(done.session_id, alice.key);
  t.match(aliceSaw, /SECRET=none/);
  t.notOk(aliceSaw.includes(bobHome), `alice's run is not in bob's computer (${aliceSaw.trim()})`);
  t.equal((await api(`/api/sessions/${done.session_id}`, bob.key)).status, 404, "the run's session is alice's");

  // Back in the workspace, bob's agent is not: it would join again on his next assignment only.
  t.equal((await api(`${w}/members`, alice.key, 'POST', { user_id: bob.userId })).status, 200);
  t.same((await (await api(`${w}/agents`, alice.key)).json()).items.map((a: any) => a.agent_id), [aliceAgent], "bob's agent left for good");
});

t.test('a run still starting when its member leaves never reaches the model', async (t) => {
  const { app, model } = await buildWithModel(t);
  const bob = await app.newUser('bob');
  const api = (path: string, method = 'GET', json?: unknown, key = app.adminKey) => app.api(path, { method, json, key });
  // The agent's first run instantiates it: its init_script holds the run in `starting` a while.
  const agent = await (await api('/api/prod_agents', 'POST', { name: 'Slow', solution_id: 'code-reviewer', biz_role_id: 'fixer', init_script: 'sleep 3' }, bob.key)).json();
  const ws = await (await api('/api/prod_workspaces', 'POST', { name: 'Ops' })).json();
  const w = `/api/prod_workspaces/${ws.id}`;
  await api(`${w}/members`, 'POST', { user_id: bob.userId });
  t.equal((await api(`${w}/agents`, 'POST', { agent_id: agent.record_id }, bob.key)).status, 200);
  const issue = await (await api(`${w}/issues`, 'POST', { title: 'Slow start', assignee_type: 'agent', assignee_id: agent.record_id }, bob.key)).json();
  const runs = async () => (await (await api(`${w}/issues/${issue.id}/task-runs`)).json()).items;
  t.match(await runs(), [{ status: 'starting' }]);
  t.equal((await api(`${w}/members/${bob.userId}`, 'DELETE', undefined, bob.key)).status, 200, 'bob leaves');
  t.match(await runs(), [{ status: 'interrupted', error: /left the workspace/ }]);
  // The init_script ends; the run must not go on: watched for 2 s after, when the old code had
  // made the session and called the model within milliseconds.
  const status = async () => (await (await api(`/api/prod_agents/${encodeURIComponent(agent.provider_key)}`, 'GET', undefined, bob.key)).json()).agent.status;
  await waitFor(async () => (await status()) !== 'created', { timeoutMs: 10_000, everyMs: 100, what: 'the init_script to end' });
  t.equal(await status(), 'ready', 'the init_script ran');
  const sessions = async () => (await app.service.db.sql<{ n: number }>('select count(*)::int as n from sessions where user_id = ?', [bob.userId]))[0].n;
  await quietFor(2000, 'a session or a model call of the interrupted run');

  t.equal(await sessions(), 0, 'no session of the run was made');
  t.equal(model.requests.length, 0, 'no model call');
  t.match(await runs(), [{ status: 'interrupted', session_id: null }]);
});
