import { existsSync } from 'node:fs';
import t from 'tap';
import { buildWithModel, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** Production agents (docs/solutions-and-admin.md "Production agents"): records, bounds, instantiate, start-session. */

const base = { name: 'Greeter', solution_id: 'code-reviewer', biz_role_id: 'fixer' };

t.test('production agents: CRUD, bounds, isolation, provider_key, catalog', async (t) => {
  const { app } = await buildWithModel(t);
  const post = async (json: unknown, key?: string) => {
    const r = await app.api('/api/prod_agents', { method: 'POST', json, key });
    return { status: r.status, body: await r.json() };
  };
  const a = await post({ ...base, icon: 'robot', skills: ['review-checklist'], preview_urls: [{ name: 'app', url: 'http://localhost:3000' }], instructions: 'Be brief.' });
  t.equal(a.status, 200, JSON.stringify(a.body));
  t.match(a.body, {
    record_id: /^agent_/,
    provider_key: `local:${a.body.record_id}`,
    name: 'Greeter',
    icon: 'robot',
    layout_type: 'default',
    visibility: 'workspace',
    runtime_provider: 'local',
    status: 'created',
    skills: ['review-checklist'],
    instantiated_at: null,
  });
  const id = a.body.record_id;
  t.same((await (await app.api('/api/prod_agents')).json()).items.map((x: any) => x.record_id), [id]);
  const byKey = await (await app.api(`/api/prod_agents/${encodeURIComponent(a.body.provider_key)}`)).json();
  t.match(byKey, { provider: 'local', runtime: { id: 'local', type: 'runner' }, agent: { record_id: id } });
  t.equal((await app.api(`/api/prod_agents/fake-model:${id}`)).status, 404, 'provider_key with the wrong runtime');
  t.equal((await app.api(`/api/prod_agents/${id}`)).status, 404, 'a bare record id is not a provider key');

  const patched = await app.api(`/api/prod_agents/${id}`, { method: 'PATCH', json: { name: 'Greeter 2', runtime_provider: 'fake-model', initial_mode: 'planning' } });
  t.match(await patched.json(), { name: 'Greeter 2', runtime_provider: 'fake-model', provider_key: `fake-model:${id}`, initial_mode: 'planning', icon: 'robot' });
  t.equal((await app.api(`/api/prod_agents/${id}`, { method: 'PATCH', json: { agent_id: 'x' } })).status, 422, 'agent_id cannot be patched');

  const cat = await (await app.api('/api/prod_agents/catalog/solutions')).json();
  t.ok(cat.items.some((s: any) => s.id === 'code-reviewer' && s.roles.some((r: any) => r.id === 'fixer' && r.allowed)));

  const long = (n: number) => 'x'.repeat(n);
  for (const [what, body, field] of [
    ['no name', { ...base, name: '' }, 'name'],
    ['long name', { ...base, name: long(129) }, 'name'],
    ['long icon', { ...base, icon: long(65) }, 'icon'],
    ['no solution', { name: 'a', biz_role_id: 'fixer' }, 'solution_id'],
    ['long solution', { ...base, solution_id: long(129) }, 'solution_id'],
    ['no role', { name: 'a', solution_id: 'code-reviewer' }, 'biz_role_id'],
    ['unknown solution', { ...base, solution_id: 'nope' }, 'solution_id'],
    ['unknown role', { ...base, biz_role_id: 'nope' }, 'biz_role_id'],
    ['long template', { ...base, agent_template: long(200001) }, 'agent_template'],
    ['long init_script', { ...base, init_script: long(200001) }, 'init_script'],
    ['long instructions', { ...base, instructions: long(200001) }, 'instructions'],
    ['long initial_mode', { ...base, initial_mode: long(65) }, 'initial_mode'],
    ['long layout_type', { ...base, layout_type: long(65) }, 'layout_type'],
    ['long runtime', { ...base, runtime_provider: long(257) }, 'runtime_provider'],
    ['unknown runtime', { ...base, runtime_provider: 'k8s' }, 'runtime_provider'],
    ['long visibility', { ...base, visibility: long(33) }, 'visibility'],
    ['201 skills', { ...base, skills: Array.from({ length: 201 }, (_, i) => `s${i}`) }, 'skills'],
    ['201 preview urls', { ...base, preview_urls: Array.from({ length: 201 }, () => ({ name: 'a', url: 'b' })) }, 'preview_urls'],
    ['preview name empty', { ...base, preview_urls: [{ name: '', url: 'b' }] }, 'preview_urls'],
    ['preview url long', { ...base, preview_urls: [{ name: 'a', url: long(2001) }] }, 'preview_urls'],
    ['unknown field', { ...base, colour: 'red' }, ''],
  ] as const) {
    const r = await post(body);
    t.equal(r.status, 422, what);
    t.equal(r.body.code, 'VALIDATION_ERROR', what);
    if (field) t.match(JSON.stringify(r.body.detail), field, `${what} names ${field}`);
  }
  t.equal((await (await app.api('/api/prod_agents')).json()).items.length, 1, 'nothing stored by bad input');

  const bob = await app.newUser();
  t.same(await (await app.api('/api/prod_agents', { key: bob.key })).json(), { items: [] });
  for (const [m, p] of [
    ['PATCH', `/api/prod_agents/${id}`],
    ['DELETE', `/api/prod_agents/${id}`],
    ['POST', `/api/prod_agents/${id}/instantiate`],
    ['POST', `/api/prod_agents/${id}/start-session`],
    ['GET', `/api/prod_agents/${encodeURIComponent(`fake-model:${id}`)}`],
  ]) {
    const r = await app.api(p, { method: m, key: bob.key, ...(m === 'PATCH' ? { json: { name: 'mine' } } : {}) });
    t.equal(r.status, 404, `${m} ${p} by another user`);
  }
  t.same(await (await app.api(`/api/prod_agents/${id}`, { method: 'DELETE' })).json(), { ok: true });
  t.equal((await app.api(`/api/prod_agents/${id}`, { method: 'DELETE' })).status, 404);
});

t.test('instantiate runs init_script in the computer and installs skills; a started session uses the tool', async (t) => {
  const { app, model } = await buildWithModel(t);
  const init = ['mkdir -p bin', 'printf \'#!/bin/sh\\necho "hello, $1, from greet"\\n\' > bin/greet', 'chmod +x bin/greet', 'echo installed greet'].join('\n');
  const created = await (
    await app.api('/api/prod_agents', {
      method: 'POST',
      json: { ...base, init_script: init, skills: ['review-checklist', 'greeting'], skills_data: { greeting: '---\nname: greeting\ndescription: greet people\n---\nRun greet NAME.' }, instructions: 'Greet whoever the user names with the greet command.' },
    })
  ).json();
  const id = created.record_id;
  const inst = await (await app.api(`/api/prod_agents/${id}/instantiate`, { method: 'POST' })).json();
  t.match(inst, { record_id: id, status: 'ready', exit_code: 0 });
  t.match(inst.log, /installed greet/);
  t.match(inst.log, /skill greeting installed/);
  t.match(inst.log, /skill review-checklist installed/);
  t.match(await (await app.api(`/api/prod_agents/${encodeURIComponent(created.provider_key)}`)).json(), { agent: { status: 'ready', instantiated_at: String } });

  const started = await (await app.api(`/api/prod_agents/${id}/start-session`, { method: 'POST' })).json();
  t.match(started, { session_id: /^sess_/, route_solution_id: 'code-reviewer' });
  const sid = started.session_id;
  const detail = await (await app.api(`/api/sessions/${sid}`)).json();
  t.match(detail, { solution_id: 'code-reviewer', biz_role_id: 'fixer', intent: 'Greeter', solution: { id: 'code-reviewer', role: { id: 'fixer', name: 'Fixer' } } });
  const skill = await app.api(`/api/sessions/${sid}/files/.skills/greeting/SKILL.md`);
  t.equal(skill.status, 200, 'skills_data skill copied into the session');
  t.match(await skill.text(), /Run greet NAME/);

  model.script({ toolCalls: [{ name: 'Bash', args: { command: 'greet Ada' } }] }, { text: ['done'] });
  const w = await watch(app, sid);
  t.equal((await request(w.sock, 'chat:send', { session_id: sid, message: 'greet Ada' })).ok, true);
  await untilEnd(w.seen, sid);
  const sys = model.requests[0].messages[0].content as string;
  t.match(sys, /Greet whoever the user names/, 'instructions in the system prompt');
  t.match(sys, /Role: Fixer/, "the role's prompt");
  const result = w.seen.find((e) => e.name === 'turn:patch' && e.payload.patch_type === 'tool_result');
  t.match(result?.payload.data, { status: 'done' });
  t.match(result?.payload.data.result, /hello, Ada, from greet/, 'the tool the init script installed ran');
  t.comment(`instantiate log: ${inst.log.replace(/\n/g, ' | ')}`);
  t.comment(`Bash "greet Ada" in the started session: ${result?.payload.data.result.trim()}`);

  const bad = await (await app.api('/api/prod_agents', { method: 'POST', json: { ...base, name: 'broken', init_script: 'echo trying; exit 3' } })).json();
  const failed = await (await app.api(`/api/prod_agents/${bad.record_id}/instantiate`, { method: 'POST' })).json();
  t.match(failed, { status: 'failed', exit_code: 3 });
  t.match(failed.log, /trying/);
  const refused = await app.api(`/api/prod_agents/${bad.record_id}/start-session`, { method: 'POST' });
  t.equal(refused.status, 409);
  t.equal((await refused.json()).code, 'AGENT_NOT_READY');
});

t.test("init_script goes through the user's tool policy: an admin's deny Bash stops it, an ask is a deny", async (t) => {
  const { app } = await buildWithModel(t);
  const bob = await app.newUser('bob');
  const setRules = async (rules: unknown[]) => {
    const r = await app.api(`/api/admin/users/${bob.userId}/policy`, { method: 'PUT', json: { rules } });
    t.equal(r.status, 200, 'the admin sets bob\'s rules');
  };
  const instantiate = async (init_script: string) => {
    const created = await (await app.api('/api/prod_agents', { method: 'POST', json: { ...base, init_script }, key: bob.key })).json();
    const r = await app.api(`/api/prod_agents/${created.record_id}/instantiate`, { method: 'POST', key: bob.key });
    t.equal(r.status, 200);
    return { id: created.record_id as string, ...(await r.json()) };
  };
  const audit = async () => (await (await app.api(`/api/audit?user_id=${bob.userId}&limit=50`)).json()).items as { session_id: string; tool_name: string; action: string; decided_by: string; rule: unknown }[];
  const made = (id: string) => existsSync(`${app.config.workspaces}/${bob.userId}/.prod_agents/${id}/ran-init`);

  await setRules([{ tool: 'Bash', action: 'deny' }]);
  const denied = await instantiate('touch ran-init; echo ran');
  t.match(denied, { status: 'failed', exit_code: null });
  t.match(denied.log, /init_script not run: denied by policy: .*Bash/, 'the log says why');
  t.notMatch(denied.log, /\bran\b/, 'the script did not run');
  t.equal(made(denied.id), false, 'nothing the script would make exists');
  t.match(await audit(), [{ session_id: denied.id, tool_name: 'Bash', action: 'denied', decided_by: 'policy', rule: { tool: 'Bash', action: 'deny' } }], 'one audit record of the refusal');
  const start = await app.api(`/api/prod_agents/${denied.id}/start-session`, { method: 'POST', key: bob.key });
  t.equal(start.status, 409, 'a session of the agent is refused, with the reason');
  t.match(await start.json(), { code: 'AGENT_NOT_READY', detail: /denied by policy/ });

  await setRules([{ tool: 'Bash', pattern: 'rm *', action: 'ask' }]);
  const asked = await instantiate('rm -f ran-init; touch ran-init');
  t.match(asked, { status: 'failed', exit_code: null });
  t.match(asked.log, /ask is deny/, 'nobody is there to answer: refused');
  t.equal(made(asked.id), false);
  t.match((await audit()).filter((r) => r.session_id === asked.id).map((r) => [r.action, r.decided_by]), [['denied', 'unattended'], ['asked', 'policy']]);

  await setRules([{ tool: 'Bash', pattern: 'curl *', action: 'deny' }]);
  const fine = await instantiate('touch ran-init; echo ran');
  t.match(fine, { status: 'ready', exit_code: 0 }, 'a script the rules do not name runs');
  t.equal(made(fine.id), true);
});
