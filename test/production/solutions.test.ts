import t from 'tap';
import { build } from '../helpers/app.js';
import { buildWithModel, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** Production solutions (docs/solutions-and-admin.md): records, versioned DAG and architecture, validation, agents. */

const flow = {
  steps: [{ id: 's1', name: 'Intake', node_ids: ['in', 'review'] }, { id: 's2', name: 'Approve', node_ids: ['ok', 'out'] }],
  nodes: [
    { id: 'in', type: 'input', name: 'Pull request', data: {} },
    { id: 'review', type: 'agent', name: 'Review', data: { role_id: 'reviewer', prompt: 'Review the change' } },
    { id: 'lint', type: 'tool', name: 'Lint', data: { tool: 'Bash', arguments: { command: 'npm run lint' } } },
    { id: 'gate', type: 'condition', name: 'Clean?', data: { expression: 'findings == 0' } },
    { id: 'ok', type: 'human', name: 'Approve', data: { kind: 'approval' } },
    { id: 'out', type: 'output', name: 'Merge', data: {} },
  ],
  edges: [
    { id: 'e1', source: 'in', target: 'review' },
    { id: 'e2', source: 'review', target: 'lint' },
    { id: 'e3', source: 'lint', target: 'gate' },
    { id: 'e4', source: 'gate', target: 'ok', condition: 'true' },
    { id: 'e5', source: 'ok', target: 'out' },
  ],
  viewport: { x: 0, y: 0, zoom: 1 },
};

t.test('records, DAG versions, conflicts, validation, publish, delete, rollback, isolation', async (t) => {
  const app = await build(t);
  const api = async (method: string, path: string, json?: unknown, key?: string) => {
    const r = await app.api(path, { method, key, ...(json === undefined ? {} : { json }) });
    return { status: r.status, body: await r.json() };
  };
  const created = await api('POST', '/api/prod_solution', { name: 'PR pipeline', description: 'Reviews pull requests' });
  t.equal(created.status, 200);
  t.match(created.body, { id: /^psol_/, name: 'PR pipeline', description: 'Reviews pull requests', status: 'draft', session_id: null, dag_version: 1, architecture_version: 1, published_dag_version: null });
  const id = created.body.id;
  const dag = `/api/prod_solution/dag/${id}`;
  t.match((await api('GET', dag)).body, { prod_solution_id: id, version: 1, published: false, dag: { steps: [], nodes: [], edges: [] } });
  t.same((await api('POST', `${dag}/validate`, { dag: {} })).body, { valid: true, errors: [] }, 'an empty DAG is valid');

  const v2 = await api('PUT', dag, { base_version: 1, dag: flow, message: 'first draft' });
  t.equal(v2.status, 200);
  t.match(v2.body, { version: 2, message: 'first draft', dag: { nodes: flow.nodes } });
  const stale = await api('PUT', dag, { base_version: 1, dag: { nodes: [] } });
  t.equal(stale.status, 409);
  t.equal(stale.body.code, 'VERSION_CONFLICT');
  t.match((await api('GET', dag)).body, { version: 2 }, 'the stale save changed nothing');

  // Two clients save against the same base version at the same time: exactly one wins, every round.
  let base = 2;
  for (let round = 0; round < 5; round++) {
    const [a, b] = await Promise.all([
      api('PUT', dag, { base_version: base, dag: { ...flow, viewport: { zoom: 1 + round } }, message: `a${round}` }),
      api('PUT', dag, { base_version: base, dag: { ...flow, viewport: { zoom: 2 + round } }, message: `b${round}` }),
    ]);
    t.same([a.status, b.status].sort(), [200, 409], `round ${round}: one save wins`);
    t.comment(`round ${round}: base ${base}: client a ${a.status}${a.status === 200 ? ` (v${a.body.version})` : ` ${a.body.code}`}, client b ${b.status}${b.status === 200 ? ` (v${b.body.version})` : ` ${b.body.code}`}`);
    base++;
    t.equal((await api('GET', dag)).body.version, base);
  }
  t.equal((await api('GET', `${dag}/versions`)).body.items.length, base, 'one version per successful save');

  // Validation answers each error with its path; publish refuses an invalid version.
  const broken = {
    steps: [{ id: 'st', name: 'x', node_ids: ['a', 'ghost'] }],
    nodes: [
      { id: 'a', type: 'input' },
      { id: 'a', type: 'output' },
      { id: 'b', type: 'robot' },
      { id: 'c', type: 'agent', data: { role_id: 'no-such-role' } },
      { id: 'd', type: 'condition', data: {} },
      { id: 'x', type: 'tool', data: { tool: 'Bash' } },
      { id: 'y', type: 'tool', data: { tool: 'Bash' } },
    ],
    edges: [
      { id: 'e1', source: 'a', target: 'missing' },
      { id: 'e2', source: 'x', target: 'y' },
      { id: 'e3', source: 'y', target: 'x' },
    ],
  };
  const checked = (await api('POST', `${dag}/validate`, { dag: broken })).body;
  t.equal(checked.valid, false);
  const paths = checked.errors.map((e: any) => e.path);
  for (const p of ['nodes[1].id', 'nodes[2].type', 'nodes[3].data.role_id', 'nodes[4].data.expression', 'edges[0].target', 'edges[2]', 'steps[0].node_ids[1]']) t.ok(paths.includes(p), `error at ${p}`);
  t.match(checked.errors.find((e: any) => e.path === 'edges[2]').message, /cycle: (x -> y -> x|y -> x -> y)/);
  t.match((await api('POST', `${dag}/validate`, { dag: { nodes: [{ id: 'n', type: 'agent', data: { agent_id: 'agent_nope' } }] } })).body.errors, [{ path: 'nodes[0].data.agent_id' }]);
  t.match((await api('POST', `${dag}/validate`, { dag: { nodes: [{ id: 'n', type: 'tool', data: { tool: 't' } }], edges: [{ id: 'e', source: 'n', target: 'n' }] } })).body.errors, [{ path: 'edges[0]', message: /cycle: n -> n/ }]);

  const bad = await api('PUT', dag, { base_version: base, dag: broken, message: 'broken' });
  t.equal(bad.status, 200, 'a draft may be invalid');
  base++;
  const refused = await api('POST', `${dag}/publish`, {});
  t.equal(refused.status, 422, 'publish refuses an invalid version');
  t.equal(refused.body.code, 'INVALID_DOCUMENT');
  t.ok(refused.body.detail.some((e: any) => e.path === 'edges[2]'));
  t.equal((await api('GET', `/api/prod_solution/${id}`)).body.published_dag_version, null, 'nothing published');
  const refusedPayload = await api('POST', `${dag}/publish`, { dag: broken });
  t.equal(refusedPayload.status, 422);
  t.equal((await api('GET', dag)).body.version, base, 'an invalid payload is not saved');

  const pub = await api('POST', `${dag}/publish`, { version: 2, message: 'go live' });
  t.equal(pub.status, 200);
  t.match(pub.body, { version: 2, published: true, published_at: String, published_version: 2, message: 'go live' });
  t.equal((await api('GET', `/api/prod_solution/${id}`)).body.published_dag_version, 2);
  const del = await api('DELETE', `${dag}/versions/2`);
  t.equal(del.status, 409);
  t.equal(del.body.code, 'VERSION_PUBLISHED');
  t.equal((await api('DELETE', `${dag}/versions/${base}`)).status, 409, 'the current version stays');
  t.same((await api('DELETE', `${dag}/versions/3`)).body, { ok: true });
  t.equal((await api('GET', `${dag}/versions/3`)).status, 404);
  t.equal((await api('DELETE', `${dag}/versions/3`)).status, 404);

  // Rollback: a new version equal to from_version.
  const rb = await api('POST', `${dag}/rollback`, { from_version: 2 });
  t.equal(rb.status, 200);
  t.match(rb.body, { version: base + 1, message: 'rollback to version 2', published: false });
  t.same(rb.body.dag, (await api('GET', `${dag}/versions/2`)).body.dag);
  t.comment(`rollback from_version 2 -> new version ${rb.body.version} (${rb.body.dag.nodes.length} nodes, equal to v2)`);
  base++;
  t.equal((await api('POST', `${dag}/rollback`, { from_version: 3 })).status, 422, 'a deleted version');
  const pubNew = await api('POST', `${dag}/publish`, { dag: flow, message: 'from payload' });
  t.match(pubNew.body, { version: base + 1, published: true, message: 'from payload' });
  base++;
  const versions = (await api('GET', `${dag}/versions`)).body.items;
  t.same(versions.map((v: any) => v.version), [...Array(base).keys()].map((i) => base - i).filter((v) => v !== 3), 'newest first, 3 deleted');
  t.match(versions[0], { published: true, nodes: flow.nodes.length });

  // Architecture: the same operations under the key architecture.
  const arch = `/api/prod_solution/architecture/${id}`;
  t.match((await api('GET', arch)).body, { version: 1, architecture: { nodes: [] } });
  const a2 = await api('PUT', arch, { base_version: 1, architecture: { nodes: [{ id: 'api' }, { id: 'db' }], viewport: { zoom: 1 } } });
  t.match(a2.body, { version: 2, architecture: { nodes: [{ id: 'api' }, { id: 'db' }] } });
  t.equal((await api('PUT', arch, { base_version: 1, architecture: { nodes: [] } })).status, 409);
  t.match((await api('POST', `${arch}/validate`, { architecture: { nodes: [{ id: 'x' }, { id: 'x' }] } })).body, { valid: false, errors: [{ path: 'nodes[1].id' }] });
  t.equal((await api('PUT', arch, { base_version: 2, architecture: { nodes: [{ id: 'x' }, { id: 'x' }] } })).status, 200);
  t.equal((await api('POST', `${arch}/publish`, {})).status, 422);
  t.match((await api('POST', `${arch}/publish`, { version: 2 })).body, { published: true, version: 2 });
  t.match((await api('POST', `${arch}/rollback`, { from_version: 2 })).body, { version: 4, architecture: { nodes: [{ id: 'api' }, { id: 'db' }] } });
  t.equal((await api('PUT', arch, { base_version: 4, dag: flow })).status, 422, 'the key is architecture');

  // Bounds.
  for (const [what, m, p, body] of [
    ['no name', 'POST', '/api/prod_solution', { name: '' }],
    ['unknown field', 'POST', '/api/prod_solution', { name: 'x', colour: 1 }],
    ['base_version 0', 'PUT', dag, { base_version: 0, dag: {} }],
    ['no base_version', 'PUT', dag, { dag: {} }],
    ['nodes not an array', 'PUT', dag, { base_version: base, dag: { nodes: {} } }],
    ['from_version 0', 'POST', `${dag}/rollback`, { from_version: 0 }],
    ['publish version 0', 'POST', `${dag}/publish`, { version: 0 }],
    ['publish both', 'POST', `${dag}/publish`, { version: 2, dag: flow }],
    ['publish unknown version', 'POST', `${dag}/publish`, { version: 999 }],
    ['bad status', 'PATCH', `/api/prod_solution/${id}`, { status: 'deleted' }],
    ['empty session', 'PUT', `/api/prod_solution/${id}/session`, { session_id: '' }],
    ['architecture without nodes', 'PUT', arch, { base_version: 4, architecture: {} }],
  ] as const) {
    const r = await api(m, p, body);
    t.equal(r.status, 422, what);
  }
  // A session named in a body is checked like a path id (docs/trust-boundary.md): unknown or another's, 404.
  for (const [what, m, p, body] of [
    ['unknown session', 'POST', '/api/prod_solution', { name: 'x', session_id: 'sess_nope' }],
    ['unknown session binding', 'PUT', `/api/prod_solution/${id}/session`, { session_id: 'sess_nope' }],
  ] as const) {
    t.equal((await api(m, p, body)).status, 404, what);
  }
  t.equal((await api('GET', `${dag}/versions/0`)).status, 422);
  t.equal((await api('GET', dag)).body.version, base, 'bad input saved nothing');

  t.match((await api('PATCH', `/api/prod_solution/${id}`, { status: 'active', name: 'PR pipeline v2' })).body, { status: 'active', name: 'PR pipeline v2', description: 'Reviews pull requests' });

  // Another user's record is a 404 on every path.
  const bob = await app.newUser();
  t.same((await api('GET', '/api/prod_solution', undefined, bob.key)).body, { items: [] });
  for (const [m, p, body] of [
    ['GET', `/api/prod_solution/${id}`],
    ['PATCH', `/api/prod_solution/${id}`, { name: 'mine' }],
    ['DELETE', `/api/prod_solution/${id}`],
    ['GET', dag],
    ['PUT', dag, { base_version: base, dag: {} }],
    ['POST', `${dag}/validate`, { dag: {} }],
    ['POST', `${dag}/publish`, {}],
    ['GET', `${dag}/versions`],
    ['GET', `${dag}/versions/2`],
    ['DELETE', `${dag}/versions/4`],
    ['POST', `${dag}/rollback`, { from_version: 2 }],
    ['GET', arch],
  ] as const) {
    t.equal((await api(m, p, body, bob.key)).status, 404, `${m} ${p} by another user`);
  }
  t.equal((await api('GET', dag)).body.version, base, "bob's requests changed nothing");

  t.same((await api('DELETE', `/api/prod_solution/${id}`)).body, { ok: true });
  t.equal((await api('GET', dag)).status, 404);
});

t.test('ai_assist binds a solution-architect session; production-solution agents and runtimes', async (t) => {
  const { app, model } = await buildWithModel(t);
  const api = async (method: string, path: string, json?: unknown, key?: string) => {
    const r = await app.api(path, { method, key, ...(json === undefined ? {} : { json }) });
    return { status: r.status, body: await r.json() };
  };
  const rec = (await api('POST', '/api/prod_solution', { name: 'Invoices', ai_assist: true, architecture_ai_assist: true })).body;
  t.match(rec, { session_id: /^sess_/, architecture_session_id: /^sess_/, flow_session_id: null });
  const s = (await api('GET', `/api/sessions/${rec.session_id}`)).body;
  t.match(s, { intent: 'Design: Invoices', solution_id: 'solution-builder', biz_role_id: 'solution-architect', mode: 'planning', solution: { role: { id: 'solution-architect' } } });
  t.equal((await app.api(`/api/sessions/${rec.session_id}/files/.skills/dag-design/SKILL.md`)).status, 200);
  model.script({ text: ['Here is a plan'] });
  const w = await watch(app, rec.session_id);
  await request(w.sock, 'chat:send', { session_id: rec.session_id, message: 'Design an invoice approval flow' });
  await untilEnd(w.seen, rec.session_id);
  const sys = model.requests[0].messages[0].content as string;
  t.match(sys, /Role: Solution architect/);
  t.match(sys, new RegExp(`production solution "Invoices" \\(id ${rec.id}\\)`));
  t.match(sys, /- dag-design:/);
  t.same(model.requests[0].tools ?? [], [], 'planning mode offers no tools');

  const other = (await api('POST', '/api/sessions', {})).body.session_id;
  t.same((await api('PUT', `/api/prod_solution/${rec.id}/session`, { session_id: other })).body, { ok: true });
  t.equal((await api('GET', `/api/prod_solution/${rec.id}`)).body.session_id, other);

  const runtimes = (await api('GET', '/api/prod_solution/agents/runtimes')).body.items;
  t.match(runtimes, [{ id: 'local', type: 'runner', default: true }, { id: 'fake-model', type: 'model' }]);
  const ag = await api('POST', '/api/prod_solution/agents', { name: 'Checker', runtime_id: 'fake-model', instructions: 'Check invoices' });
  t.match(ag.body, { id: /^psagent_/, name: 'Checker', runtime_id: 'fake-model', runtime: { type: 'model' }, visibility: 'workspace', status: 'active', archived: false });
  for (const [what, body] of [
    ['no name', { name: '', runtime_id: 'local' }],
    ['no runtime', { name: 'x' }],
    ['unknown runtime', { name: 'x', runtime_id: 'mainframe' }],
    ['empty runtime', { name: 'x', runtime_id: '' }],
    ['long visibility', { name: 'x', runtime_id: 'local', visibility: 'v'.repeat(33) }],
  ] as const) {
    t.equal((await api('POST', '/api/prod_solution/agents', body)).status, 422, what);
  }
  t.same((await api('GET', '/api/prod_solution/agents')).body.items.map((a: any) => a.id), [ag.body.id]);
  t.match((await api('GET', `/api/prod_solution/agents/${ag.body.id}`)).body, { name: 'Checker' });
  // A DAG agent node may name it.
  const dagOk = await api('POST', `/api/prod_solution/dag/${rec.id}/validate`, { dag: { nodes: [{ id: 'n', type: 'agent', data: { agent_id: ag.body.id, prompt: 'check' } }] } });
  t.same(dagOk.body, { valid: true, errors: [] });
  await api('PATCH', `/api/prod_solution/agents/${ag.body.id}`, { archived: true });
  t.same((await api('GET', '/api/prod_solution/agents')).body.items, []);
  t.equal((await api('GET', '/api/prod_solution/agents?include_archived=true')).body.items.length, 1);
  t.equal((await api('GET', '/api/prod_solution/agents?include_archived=maybe')).status, 422);
  const bob = await app.newUser();
  t.equal((await api('GET', `/api/prod_solution/agents/${ag.body.id}`, undefined, bob.key)).status, 404);
  t.same((await api('GET', '/api/prod_solution/agents?include_archived=true', undefined, bob.key)).body, { items: [] });
});
