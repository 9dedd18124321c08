import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** Solutions and roles (docs/solutions-and-admin.md): the catalogue, and sessions that really run with a role. */

const toolNames = (req: any): string[] => (req.tools ?? []).map((x: any) => x.function.name).sort();

t.test('catalogue: shipped solutions, files confined, biz-roles, a broken package skipped', async (t) => {
  const { app } = await buildWithModel(t);
  const list = await (await app.api('/api/solutions')).json();
  const ids = list.items.map((s: any) => s.id);
  t.ok(['code-reviewer', 'data-analyst', 'solution-builder'].every((id) => ids.includes(id)), ids.join());
  const cr = list.items.find((s: any) => s.id === 'code-reviewer');
  t.match(cr, { name: 'Code reviewer', version: '1.0.0', layout_type: 'default', data: { category: 'engineering' } });
  t.same(cr.roles.map((r: any) => r.id), ['reviewer', 'fixer']);
  t.match(cr.roles[0], { id: 'reviewer', name: 'Reviewer', system_prompt: /code reviewer/, skills: ['review-checklist'], initial_mode: 'executing' });
  t.notOk('dir' in cr, 'no host paths leak');

  const md = await app.api('/api/solutions/code-reviewer/files/skills/review-checklist/SKILL.md');
  t.equal(md.status, 200);
  t.match(await md.text(), /name: review-checklist/);
  const json = await app.api('/api/solutions/data-analyst/files/solution.json');
  t.match(json.headers.get('content-type'), /json/);
  t.equal((await json.json()).id, 'data-analyst');
  t.equal((await app.api('/api/solutions/code-reviewer/files/nope.txt')).status, 404);
  t.equal((await app.api('/api/solutions/code-reviewer/files/..%2f..%2fpackage.json')).status, 422, 'escape refused');
  t.equal((await app.api('/api/solutions/code-reviewer/files/skills/..%2f..%2f..%2fpackage.json')).status, 422);
  t.equal((await app.api('/api/solutions/nope/files/solution.json')).status, 404);

  const roles = await (await app.api('/api/solutions/code-reviewer/biz-roles')).json();
  t.match(roles, { solution_id: 'code-reviewer', user_id: /^user_/, items: [{ id: 'reviewer' }, { id: 'fixer' }] });
  t.equal((await app.api('/api/solutions/nope/biz-roles')).status, 404);
  const bob = await app.newUser();
  t.equal((await app.api(`/api/solutions/code-reviewer/biz-roles?user_id=${roles.user_id}`, { key: bob.key })).status, 403, "a non-admin reading another user's roles");
  t.equal((await (await app.api(`/api/solutions/code-reviewer/biz-roles?user_id=${bob.userId}`)).json()).user_id, bob.userId, 'an admin may');
  t.equal((await app.api('/api/solutions/code-reviewer/biz-roles?user_id=user_nobody')).status, 404);

  // Operator-installed packages in AGENTSVC_HOME/solutions: a good one loads, broken ones are reported and skipped.
  const put = (id: string, body: unknown) => {
    mkdirSync(join(app.home, 'solutions', id), { recursive: true });
    writeFileSync(join(app.home, 'solutions', id, 'solution.json'), typeof body === 'string' ? body : JSON.stringify(body));
  };
  put('mine', { id: 'mine', name: 'Mine', version: '0.1', roles: [{ id: 'helper', name: 'Helper', system_prompt: 'You help.' }] });
  put('broken-json', '{ not json');
  put('no-roles', { id: 'no-roles', name: 'x', version: '1', roles: [] });
  put('bad-role', { id: 'bad-role', name: 'x', version: '1', roles: [{ id: 'r', name: 'R', system_prompt: 'p', initial_mode: 'dreaming' }] });
  put('code-reviewer', { id: 'code-reviewer', name: 'dup', version: '1', roles: [{ id: 'r', name: 'R', system_prompt: 'p' }] });
  await app.restart();
  const after = (await (await app.api('/api/solutions')).json()).items.map((s: any) => s.id);
  t.ok(after.includes('mine'));
  t.notOk(after.includes('broken-json') || after.includes('no-roles') || after.includes('bad-role'));
  t.equal((await (await app.api('/api/solutions')).json()).items.find((s: any) => s.id === 'code-reviewer').name, 'Code reviewer', 'the shipped package wins');
  const warnings = app.service.warnings.join('\n');
  for (const w of ['broken-json', 'no-roles', 'bad-role', 'initial_mode', 'already defined']) t.match(warnings, w, `reported: ${w}`);
});

t.test('a plugin folder brings its solutions beside its module', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-plugin-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'index.mjs'), "export default { name: 'with-solutions', register() {} };\n");
  mkdirSync(join(dir, 'solutions', 'triage'), { recursive: true });
  writeFileSync(
    join(dir, 'solutions', 'triage', 'solution.json'),
    JSON.stringify({ id: 'triage', name: 'Triage', version: '2.0.0', roles: [{ id: 'triager', name: 'Triager', system_prompt: 'Sort incoming tickets by urgency.', tools: ['Read'] }] }),
  );
  const { app, model } = await buildWithModel(t, { AGENTSVC_PLUGINS: join(dir, 'index.mjs') });
  t.ok((await (await app.api('/api/solutions')).json()).items.some((s: any) => s.id === 'triage'));
  const sid = await createSession(app, app.adminKey, { solution_id: 'triage', biz_role_id: 'triager' });
  const w = await watch(app, sid);
  await request(w.sock, 'chat:send', { session_id: sid, message: 'hi' });
  await untilEnd(w.seen, sid);
  t.match(model.requests[0].messages[0].content, /Sort incoming tickets by urgency/);
  t.same(toolNames(model.requests[0]), ['Read']);
});

t.test('a session of each shipped role runs with its prompt, tools, skills and initial_mode', async (t) => {
  const { app, model } = await buildWithModel(t);
  const solutions = (await (await app.api('/api/solutions')).json()).items.filter((s: any) => ['code-reviewer', 'data-analyst', 'solution-builder'].includes(s.id));
  for (const s of solutions) {
    for (const role of s.roles) {
      const sid = await createSession(app, app.adminKey, { solution_id: s.id, biz_role_id: role.id });
      const d = await (await app.api(`/api/sessions/${sid}`)).json();
      t.same(d.solution, { id: s.id, name: s.name, version: s.version, role: { id: role.id, name: role.name } }, `${role.id}: detail.solution`);
      t.equal(d.mode, role.initial_mode ?? 'executing', `${role.id}: initial_mode`);
      for (const sk of role.skills) t.equal((await app.api(`/api/sessions/${sid}/files/.skills/${sk}/SKILL.md`)).status, 200, `${role.id}: skill ${sk} installed`);
      model.requests.length = 0;
      model.script({ text: ['hello'] });
      const w = await watch(app, sid);
      t.equal((await request(w.sock, 'chat:send', { session_id: sid, message: 'start' })).ok, true);
      await untilEnd(w.seen, sid);
      w.sock.disconnect();
      const sent = model.requests[0];
      const sys = sent.messages[0].content as string;
      t.match(sys, `Role: ${role.name}`, `${role.id}: role heading in the system prompt`);
      t.ok(sys.includes(role.system_prompt.slice(0, 80)), `${role.id}: role prompt in the system prompt`);
      for (const sk of role.skills) t.match(sys, `- ${sk}:`, `${role.id}: skill ${sk} listed`);
      const names = toolNames(sent);
      if (role.initial_mode === 'planning') t.same(names, [], `${role.id}: planning offers no tools`);
      else {
        t.ok(names.length > 0, `${role.id}: tools offered`);
        const builtinish: Record<string, string[]> = { file_ops: ['Read', 'Write', 'Edit', 'Glob', 'Grep'], bash: ['Bash'], builtin: ['AskUserQuestion', 'TaskCreate'], fork: ['Agent'] };
        const allowed = new Set(role.tools.flatMap((x: string) => [x, ...(builtinish[x] ?? [])]));
        const extra = names.filter((n) => !allowed.has(n) && !/^Task|^Skill|^Memory/.test(n));
        t.same(extra, [], `${role.id}: only its tools (${names.join(',')})`);
      }
      t.comment(`${s.id}/${role.id}: mode ${d.mode}; tools ${names.join(', ') || '(none)'}; system prompt ${sys.length} chars`);
      t.comment(`  role section: ${sys.slice(sys.indexOf('# Role:')).replace(/\n+/g, ' | ').slice(0, 160)}...`);
    }
  }
  // A plain session is untouched: no role section, every tool.
  const plain = await createSession(app);
  model.requests.length = 0;
  const w = await watch(app, plain);
  await request(w.sock, 'chat:send', { session_id: plain, message: 'hi' });
  await untilEnd(w.seen, plain);
  t.notMatch(model.requests[0].messages[0].content, /Role:/);
  t.ok(toolNames(model.requests[0]).includes('Bash'));
});

t.test('a role without a tool cannot run it; role bounds at creation', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app, app.adminKey, { solution_id: 'code-reviewer', biz_role_id: 'reviewer' });
  model.script({ toolCalls: [{ name: 'Bash', args: { command: 'echo pwned > hacked.txt' } }] }, { text: ['ok'] });
  const w = await watch(app, sid);
  await request(w.sock, 'chat:send', { session_id: sid, message: 'run it' });
  await untilEnd(w.seen, sid);
  const res = w.seen.find((e) => e.name === 'turn:patch' && e.payload.patch_type === 'tool_result');
  t.equal(res?.payload.data.status, 'error', 'Bash refused for a reviewer');
  t.equal((await app.api(`/api/sessions/${sid}/files/hacked.txt`)).status, 404, 'nothing ran');

  const create = (json: unknown) => app.api('/api/sessions', { method: 'POST', json });
  for (const [what, body, field] of [
    ['unknown solution', { solution_id: 'nope', biz_role_id: 'x' }, 'solution_id'],
    ['unknown role', { solution_id: 'code-reviewer', biz_role_id: 'nope' }, 'biz_role_id'],
    ['role without solution', { biz_role_id: 'reviewer' }, 'solution_id'],
  ] as const) {
    const r = await create(body);
    t.equal(r.status, 422, what);
    t.match(JSON.stringify((await r.json()).detail), field);
  }
  const explicit = await createSession(app, app.adminKey, { solution_id: 'data-analyst', biz_role_id: 'planner', mode: 'executing' });
  t.equal((await (await app.api(`/api/sessions/${explicit}`)).json()).mode, 'executing', 'an explicit mode wins over initial_mode');
  const first = await createSession(app, app.adminKey, { solution_id: 'data-analyst' });
  t.match(await (await app.api(`/api/sessions/${first}`)).json(), { biz_role_id: 'analyst', solution: { role: { id: 'analyst' } } }, 'solution alone: its first allowed role');
});
