import t from 'tap';
import { build } from '../helpers/app.js';

/** Workspaces, members, assistant sessions and the issue tracker (docs/solutions-and-admin.md "Workspaces and issues"). */

t.test('workspaces: members only, owner rules, assistant session, bounds', async (t) => {
  const app = await build(t);
  const bob = await app.newUser('bob');
  const mal = await app.newUser('mallory');
  const post = (path: string, json: unknown, key = app.adminKey) => app.api(path, { method: 'POST', json, key });
  for (const [what, body] of [
    ['empty name', { name: '' }],
    ['name over 128', { name: 'x'.repeat(129) }],
    ['description over 1000', { name: 'a', description: 'x'.repeat(1001) }],
    ['unknown field', { name: 'a', colour: 'red' }],
    ['name not a string', { name: 5 }],
  ] as const) {
    const r = await post('/api/prod_workspaces', body);
    t.equal(r.status, 422, what);
    t.equal((await r.json()).code, 'VALIDATION_ERROR');
  }
  t.same((await (await app.api('/api/prod_workspaces')).json()).items, [], 'bad input created nothing');

  const ws = await (await post('/api/prod_workspaces', { name: 'Platform team', description: 'Infra and tooling' })).json();
  t.match(ws, { id: /^ws_/, name: 'Platform team', description: 'Infra and tooling', role: 'owner', member_count: 1, agent_count: 0, issue_count: 0 });
  const w = `/api/prod_workspaces/${ws.id}`;
  t.equal((await app.api(w, { key: bob.key })).status, 404, 'not a member: 404');
  t.same((await (await app.api('/api/prod_workspaces', { key: bob.key })).json()).items, []);

  t.equal((await post(`${w}/members`, { username: 'nobody-here' })).status, 422, 'unknown user');
  t.equal((await post(`${w}/members`, { username: 'bob', user_id: bob.userId })).status, 422, 'both ways of naming');
  const added = await post(`${w}/members`, { username: 'bob' });
  t.equal(added.status, 200);
  t.match((await added.json()).items, [{ role: 'owner', username: 'admin' }, { role: 'member', username: 'bob', user_id: bob.userId }]);
  t.equal((await post(`${w}/members`, { user_id: bob.userId })).status, 409, 'already a member');
  t.match(await (await app.api(w, { key: bob.key })).json(), { id: ws.id, role: 'member', member_count: 2 });
  t.equal((await post(`${w}/members`, { user_id: mal.userId }, bob.key)).status, 403, 'a member cannot add members');
  t.equal((await app.api(w, { method: 'PATCH', json: { name: 'x' }, key: bob.key })).status, 403);
  t.equal((await app.api(w, { method: 'DELETE', key: bob.key })).status, 403);
  t.equal((await app.api(w, { method: 'PATCH', json: { name: 'Platform' } }).then((r) => r.json())).name, 'Platform');

  for (const path of ['', '/members', '/agents', '/issues', '/issues/query', '/issues/grouped', '/issues/child-progress', '/assistant-session']) {
    t.equal((await app.api(`${w}${path}`, { key: mal.key })).status, 404, `non-member GET ${path || '/'}`);
  }
  t.equal((await post(`${w}/issues`, { title: 'x' }, mal.key)).status, 404, 'non-member POST issue');
  t.equal((await post(`${w}/members`, { user_id: mal.userId }, mal.key)).status, 404, 'non-member adds themself');

  // Assistant session: one per member and business role, made on first ask.
  const a1 = await app.api(`${w}/assistant-session`, { key: bob.key });
  t.equal(a1.status, 200);
  const s1 = await a1.json();
  t.match(s1, { id: /^sess_/, user_id: bob.userId, biz_role_id: 'workspace-assistant', solution_id: 'team-workspace', workspace_id: ws.id });
  t.equal((await (await app.api(`${w}/assistant-session`, { key: bob.key })).json()).id, s1.id, 'the same session again');
  t.not((await (await app.api(`${w}/assistant-session`)).json()).id, s1.id, "the owner's own");
  t.equal((await app.api(`${w}/assistant-session?biz_role_id=${'x'.repeat(129)}`)).status, 422, 'role over 128');
  t.equal((await app.api(`${w}/assistant-session?biz_role_id=no-such-role`)).status, 422, 'unknown role');
  const own = await (await post('/api/sessions', { intent: 'mine' }, bob.key)).json();
  const adminSession = await (await post('/api/sessions', { intent: 'admin' })).json();
  const put = (json: unknown, key = bob.key) => app.api(`${w}/assistant-session`, { method: 'PUT', json, key });
  t.equal((await put({ biz_role_id: 'workspace-assistant', session_id: adminSession.session_id })).status, 404, "someone else's session");
  t.equal((await put({ biz_role_id: '', session_id: own.session_id })).status, 422);
  t.equal((await put({ biz_role_id: 'workspace-assistant', session_id: 'x'.repeat(129) })).status, 422);
  t.equal((await put({ biz_role_id: 'workspace-assistant', session_id: own.session_id }, mal.key)).status, 404);
  const set = await put({ biz_role_id: 'workspace-assistant', session_id: own.session_id });
  t.equal(set.status, 200);
  t.equal((await set.json()).id, own.session_id);
  t.equal((await (await app.api(`${w}/assistant-session`, { key: bob.key })).json()).id, own.session_id, 'PUT binds it');

  // Leaving, removing, deleting.
  const adminId = (await (await app.api('/api/auth/me')).json()).id;
  t.equal((await app.api(`${w}/members/${adminId}`, { method: 'DELETE' })).status, 409, 'the owner stays');
  t.equal((await app.api(`${w}/members/${adminId}`, { method: 'DELETE', key: bob.key })).status, 403, 'a member cannot remove others');
  t.equal((await app.api(`${w}/members/${bob.userId}`, { method: 'DELETE', key: bob.key })).status, 200, 'a member leaves');
  t.equal((await app.api(w, { key: bob.key })).status, 404, 'and no longer sees it');
  t.equal((await app.api(w, { method: 'DELETE' })).status, 200);
  t.equal((await app.api(w)).status, 404);
});

t.test('issues: numbers, parents, labels, timeline, query, grouped, child progress, bounds', async (t) => {
  const app = await build(t);
  const bob = await app.newUser('bob');
  const post = (path: string, json: unknown, key = app.adminKey) => app.api(path, { method: 'POST', json, key });
  const ws = await (await post('/api/prod_workspaces', { name: 'Web' })).json();
  const other = await (await post('/api/prod_workspaces', { name: 'Other' })).json();
  await post(`/api/prod_workspaces/${ws.id}/members`, { user_id: bob.userId });
  const w = `/api/prod_workspaces/${ws.id}`;
  const create = async (json: Record<string, unknown>, key = app.adminKey) => {
    const r = await post(`${w}/issues`, json, key);
    if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
    return r.json();
  };
  const epic = await create({ title: 'Launch the new checkout', description: 'All of it', priority: 'high', status: 'todo', labels: ['epic', 'checkout'] });
  t.match(epic, { id: /^iss_/, number: 1, workspace_id: ws.id, priority: 'high', status: 'todo', labels: ['epic', 'checkout'], parent_id: null, assignee_id: null, created_by: /^user_/ });
  const c1 = await create({ title: 'Payment form', parent_id: epic.id, priority: 'urgent', assignee_id: bob.userId }, bob.key);
  const c2 = await create({ title: 'Receipt email', parent_id: epic.id, status: 'done', labels: ['email'] });
  const c3 = await create({ title: 'Fraud checks', parent_id: epic.id, status: 'in_progress', priority: 'medium' });
  const lone = await create({ title: 'Fix the 404 page', description: 'the footer overlaps' });
  t.same([c1.number, c2.number, c3.number, lone.number], [2, 3, 4, 5], 'numbers rise per workspace');
  t.match(c1, { assignee_type: 'member', assignee_id: bob.userId, priority: 'urgent', status: 'backlog', created_by: bob.userId });
  

  const exec = (sql: string, p: unknown[] = []) => app.service.db.em().getConnection().execute(sql, p);
  const counts = async () => (await exec('select (select count(*) from issues)::int as i, (select count(*) from issue_events)::int as e'))[0];
  const foreign = await (await post(`/api/prod_workspaces/${other.id}/issues`, { title: 'elsewhere' })).json();
  t.equal(foreign.number, 1, 'each workspace counts from 1');
  const before = await counts();
  for (const [what, body] of [
    ['no title', { description: 'x' }],
    ['empty title', { title: '' }],
    ['title over 500', { title: 'x'.repeat(501) }],
    ['bad priority', { title: 'a', priority: 'p0' }],
    ['bad status', { title: 'a', status: 'doing' }],
    ['bad assignee type', { title: 'a', assignee_type: 'robot', assignee_id: 'x' }],
    ['type without id', { title: 'a', assignee_type: 'member' }],
    ['not a member', { title: 'a', assignee_id: 'user_nobody' }],
    ['duplicate labels', { title: 'a', labels: ['x', 'x'] }],
    ['51 labels', { title: 'a', labels: Array.from({ length: 51 }, (_, i) => `l${i}`) }],
    ['label over 64', { title: 'a', labels: ['x'.repeat(65)] }],
    ['NUL in title', { title: 'a\u0000b' }],
    ['unknown field', { title: 'a', estimate: 3 }],
  ] as const) {
    t.equal((await post(`${w}/issues`, body)).status, 422, what);
  }
  // References in the body are checked like path ids (docs/trust-boundary.md): 404, nothing stored.
  for (const [what, body] of [
    ['not an agent of yours', { title: 'a', assignee_type: 'agent', assignee_id: 'agent_nope' }],
    ['unknown parent', { title: 'a', parent_id: 'iss_nope' }],
    ['a parent in another workspace', { title: 'a', parent_id: foreign.id }],
  ] as const) {
    t.equal((await post(`${w}/issues`, body)).status, 404, what);
  }
  const put = (id: string, json: unknown, key = app.adminKey) => app.api(`${w}/issues/${id}`, { method: 'PUT', json, key });
  t.equal((await put(epic.id, { parent_id: epic.id })).status, 422, 'its own parent');
  t.equal((await put(epic.id, { parent_id: c1.id })).status, 422, 'a cycle');
  t.equal((await put(epic.id, { status: 'closed' })).status, 422);
  t.equal((await put(epic.id, { number: 9 })).status, 422, 'number is not writable');
  t.equal((await app.api(`/api/prod_workspaces/${other.id}/issues/${epic.id}`)).status, 404, 'an issue through another workspace');
  t.same(await counts(), before, 'refused requests changed nothing');

  // Every change is a timeline event, with who, from and to.
  t.equal((await put(lone.id, { status: 'in_progress', priority: 'low', labels: ['ui'], assignee_id: bob.userId })).status, 200);
  const done = await (await put(lone.id, { status: 'done', title: 'Fix the 404 page footer' }, bob.key)).json();
  t.match(done, { status: 'done', title: 'Fix the 404 page footer', priority: 'low', labels: ['ui'], assignee_type: 'member' });
  t.equal((await put(lone.id, { status: 'done' })).status, 200, 'no change: no event');
  const unassigned = await (await put(lone.id, { assignee_id: null })).json();
  t.match(unassigned, { assignee_id: null, assignee_type: null });
  const tl = (await (await app.api(`${w}/issues/${lone.id}/timeline`, { key: bob.key })).json()).items;
  t.same(
    tl.map((e: any) => [e.kind, e.field, e.from, e.to, e.actor_id === bob.userId ? 'bob' : 'admin']),
    [
      ['created', null, null, null, 'admin'],
      ['updated', 'priority', 'none', 'low', 'admin'],
      ['updated', 'status', 'backlog', 'in_progress', 'admin'],
      ['updated', 'assignee_type', null, 'member', 'admin'],
      ['updated', 'assignee_id', null, bob.userId, 'admin'],
      ['updated', 'labels', [], ['ui'], 'admin'],
      ['updated', 'title', 'Fix the 404 page', 'Fix the 404 page footer', 'bob'],
      ['updated', 'status', 'in_progress', 'done', 'bob'],
      ['updated', 'assignee_type', 'member', null, 'admin'],
      ['updated', 'assignee_id', bob.userId, null, 'admin'],
    ],
  );
  const commented = await post(`${w}/issues/${lone.id}/comments`, { body: 'Looks good on mobile too.' }, bob.key);
  t.match((await commented.json()).items.at(-1), { kind: 'comment', actor_type: 'member', actor_id: bob.userId, data: { body: 'Looks good on mobile too.' } });
  t.equal((await post(`${w}/issues/${lone.id}/comments`, { body: '' })).status, 422);

  // Query: filters, paging, total.
  const q = async (qs: string) => {
    const r = await app.api(`${w}/issues/query?${qs}`);
    t.equal(r.status, 200, qs);
    return r.json();
  };
  t.same((await q('status=todo,in_progress')).items.map((i: any) => i.number).sort(), [1, 4]);
  t.same((await q('priority=urgent')).items.map((i: any) => i.number), [2]);
  t.same((await q(`assignee_id=${bob.userId}`)).items.map((i: any) => i.number), [2]);
  t.same((await q('q=receipt')).items.map((i: any) => i.number), [3], 'q matches the title, case-insensitively');
  t.same((await q('q=overlaps')).items.map((i: any) => i.number), [5], 'and the description');
  t.same((await q('q=%235')).items.map((i: any) => i.number), [5], 'and #number');
  t.same((await q('q=100%25')).items, [], '% is literal');
  t.same((await q('label=checkout')).items.map((i: any) => i.number), [1]);
  t.same((await q(`parent_id=${epic.id}`)).items.map((i: any) => i.number), [4, 3, 2]);
  const p1 = await q('limit=2');
  const p2 = await q('limit=2&offset=2');
  const p3 = await q('limit=2&offset=4');
  t.match(p1, { total: 5, limit: 2, offset: 0 });
  t.same([...p1.items, ...p2.items, ...p3.items].map((i: any) => i.number), [5, 4, 3, 2, 1], 'pages, newest first, nothing lost or repeated');
  t.equal((await q('offset=50')).total, 5, 'total past the end');
  for (const bad of ['limit=0', 'limit=201', 'offset=-1', 'limit=abc', 'status=doing', 'priority=p1', `q=${'x'.repeat(501)}`, 'status=']) {
    t.equal((await app.api(`${w}/issues/query?${bad}`)).status, 422, bad);
  }

  // Grouped.
  const byStatus = await (await app.api(`${w}/issues/grouped?by=status`)).json();
  t.same(byStatus.groups.map((g: any) => [g.key, g.count]), [
    ['backlog', 1],
    ['todo', 1],
    ['in_progress', 1],
    ['in_review', 0],
    ['done', 2],
    ['blocked', 0],
    ['cancelled', 0],
  ]);
  t.same(byStatus.groups.find((g: any) => g.key === 'done').items.map((i: any) => i.number), [5, 3]);
  const byPriority = await (await app.api(`${w}/issues/grouped?by=priority`)).json();
  t.same(byPriority.groups.map((g: any) => g.key), ['urgent', 'high', 'medium', 'low', 'none']);
  t.equal(byPriority.groups.reduce((n: number, g: any) => n + g.count, 0), 5);
  const byAssignee = await (await app.api(`${w}/issues/grouped?by=assignee`)).json();
  t.same(Object.fromEntries(byAssignee.groups.map((g: any) => [g.key ?? 'none', g.count])), { [bob.userId]: 1, none: 4 });
  t.equal((await app.api(`${w}/issues/grouped?by=colour`)).status, 422);

  // Child progress.
  await put(c1.id, { status: 'done' });
  const prog = await (await app.api(`${w}/issues/child-progress`)).json();
  t.same(prog, { items: [{ issue_id: epic.id, total: 3, done: 2, by_status: { done: 2, in_progress: 1 } }] });
  t.same(await (await app.api(`${w}/issues/child-progress?parent_id=${lone.id}`)).json(), { items: [{ issue_id: lone.id, total: 0, done: 0, by_status: {} }] });
  t.equal((await app.api(`${w}/issues/child-progress?parent_id=iss_nope`)).status, 404);
  t.equal((await app.api(`${w}/issues`)).status, 200);
  t.equal((await (await app.api(`${w}/issues`)).json()).items.length, 5);
});
