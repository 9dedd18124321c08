import t from 'tap';

type Tap = { equal: (...args: any[]) => unknown };
import { build } from '../helpers/app.js';

/**
 * Ids inside bodies are checked like path ids (docs/trust-boundary.md): a reference the caller may not use is
 * 404, the same answer as an unknown one, and nothing is stored. The security review had bob's
 * `POST /api/sessions {workspace_id: <alice's>}` and `POST /api/prod_agents {agent_id: <alice's>}`
 * answered 200, and `extra_info/by_task` answering for any task id.
 */

t.test("bob names alice's objects in bodies: 404, nothing stored", async (t) => {
  const app = await build(t);
  const alice = await app.newUser('alice');
  const bob = await app.newUser('bob');
  const call = (method: string, path: string, key: string, json?: unknown) => app.api(path, { method, json, key });
  const body = async (r: Response) => {
    if (r.status !== 200) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  const rows = async (table: string) => (await app.service.db.sql<{ n: number }>(`select count(*)::int as n from ${table} where user_id = ?`, [bob.userId]))[0].n;
  const notFound = async (t: Tap, what: string, r: Response) => {
    t.equal(r.status, 404, what);
    t.equal((await r.json()).code, 'NOT_FOUND', `${what}: NOT_FOUND`);
  };

  const ws = await body(await call('POST', '/api/prod_workspaces', alice.key, { name: "Alice's team" }));
  const aliceSession = (await body(await call('POST', '/api/sessions', alice.key, { intent: 'private', workspace_id: ws.id }))).session_id;
  const aliceAgent = (await body(await call('POST', '/api/prod_agents', alice.key, { name: 'A', solution_id: 'code-reviewer', biz_role_id: 'fixer' }))).record_id;
  const aliceSolutionAgent = (await body(await call('POST', '/api/prod_solution/agents', alice.key, { name: 'S', runtime_id: 'local' }))).id;
  await body(await call('POST', `/api/sessions/${aliceSession}/upset_extra_info`, alice.key, { extra: { task_id: 'alice-task' } }));

  t.test('POST /api/sessions {workspace_id}', async (t) => {
    const before = await rows('sessions');
    await notFound(t, "alice's workspace", await call('POST', '/api/sessions', bob.key, { intent: 'x', workspace_id: ws.id }));
    await notFound(t, 'an unknown workspace', await call('POST', '/api/sessions', bob.key, { intent: 'x', workspace_id: 'ws_nope' }));
    t.equal(await rows('sessions'), before, 'no session stored');
    // A member may name it.
    await body(await call('POST', `/api/prod_workspaces/${ws.id}/members`, alice.key, { user_id: bob.userId }));
    const mine = (await body(await call('POST', '/api/sessions', bob.key, { workspace_id: ws.id }))).session_id;
    t.equal((await body(await call('GET', `/api/sessions/${mine}`, bob.key))).workspace_id, ws.id, 'a member names the workspace');
    await body(await call('DELETE', `/api/prod_workspaces/${ws.id}/members/${bob.userId}`, alice.key));
    await notFound(t, 'after leaving it', await call('POST', '/api/sessions', bob.key, { workspace_id: ws.id }));
  });

  t.test('POST /api/prod_agents {agent_id}', async (t) => {
    const before = await rows('prod_agents');
    const make = (agent_id: string) => call('POST', '/api/prod_agents', bob.key, { name: 'B', solution_id: 'code-reviewer', biz_role_id: 'fixer', agent_id });
    await notFound(t, "alice's production agent", await make(aliceAgent));
    await notFound(t, "alice's production-solution agent", await make(aliceSolutionAgent));
    await notFound(t, 'an unknown agent', await make('agent_nope'));
    t.equal(await rows('prod_agents'), before, 'no agent stored');
    const own = (await body(await call('POST', '/api/prod_solution/agents', bob.key, { name: 'Mine', runtime_id: 'local' }))).id;
    t.equal((await body(await make(own))).agent_id, own, 'his own agent may be named');
  });

  t.test('POST /api/prod_solution {session_id, flow_session_id, architecture_session_id}', async (t) => {
    const before = await rows('prod_solutions');
    for (const field of ['session_id', 'flow_session_id', 'architecture_session_id']) {
      await notFound(t, `${field}: alice's session`, await call('POST', '/api/prod_solution', bob.key, { name: 'x', [field]: aliceSession }));
    }
    t.equal(await rows('prod_solutions'), before, 'no record stored');
  });

  t.test('PUT /api/prod_solution/{id}/session {session_id}', async (t) => {
    const rec = await body(await call('POST', '/api/prod_solution', bob.key, { name: 'mine' }));
    await notFound(t, "alice's session", await call('PUT', `/api/prod_solution/${rec.id}/session`, bob.key, { session_id: aliceSession }));
    t.equal((await body(await call('GET', `/api/prod_solution/${rec.id}`, bob.key))).session_id, null, 'not bound');
  });

  t.test('GET /api/sessions/extra_info/by_task/{task_id}', async (t) => {
    const theirs = await call('GET', '/api/sessions/extra_info/by_task/alice-task', bob.key);
    const none = await call('GET', '/api/sessions/extra_info/by_task/no-such-task', bob.key);
    t.equal(theirs.status, 404, "alice's task");
    t.same(await theirs.json(), await none.json(), 'the same answer as a task nobody has');
    t.equal((await body(await call('GET', '/api/sessions/extra_info/by_task/alice-task', alice.key))).session_id, aliceSession, 'alice finds hers');
  });

  t.test('PUT /api/prod_workspaces/{id}/assistant-session {session_id}', async (t) => {
    const own = await body(await call('POST', '/api/prod_workspaces', bob.key, { name: "Bob's team" }));
    await notFound(t, "alice's session", await call('PUT', `/api/prod_workspaces/${own.id}/assistant-session`, bob.key, { biz_role_id: 'workspace-assistant', session_id: aliceSession }));
    t.equal((await app.service.db.sql('select 1 from workspace_assistant_sessions where workspace_id = ?', [own.id])).length, 0, 'nothing bound');
  });

  t.test('POST /api/published-apps {session_id}', async (t) => {
    await notFound(t, "alice's session", await call('POST', '/api/published-apps', bob.key, { session_id: aliceSession }));
    t.equal((await app.api(`/apps/${aliceSession}/`, { key: null })).status, 404, 'nothing published');
  });
});
