import t from 'tap';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { chat, envChecks, offered } from '../plugins/helpers.js';

const skillMd = (name: string, description: string, body = 'Do it.') => `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\n${body}\n`;

t.test('global skills: shipped ones seeded, invalid ones reported, search, stats, resources', async (t) => {
  const { app } = await buildWithModel(t);
  const list = await (await app.api('/api/skills')).json();
  const byName = Object.fromEntries(list.map((s: any) => [s.name, s]));
  t.match(byName['csv-insights'], { valid: true, scope: 'global', source: 'agentsvc/csv-insights', dir: 'skills/csv-insights' });
  t.ok(byName['repo-map']?.valid, 'two skills are shipped');
  t.ok(byName['csv-insights'].files.some((f: any) => f.path === 'scripts/profile.mjs'));

  // An operator's skill with a bad front matter is listed with the reason and offered nowhere.
  mkdirSync(join(app.home, 'skills', 'broken'), { recursive: true });
  writeFileSync(join(app.home, 'skills', 'broken', 'SKILL.md'), skillMd('other-name', 'x'));
  mkdirSync(join(app.home, 'skills', 'nodesc'), { recursive: true });
  writeFileSync(join(app.home, 'skills', 'nodesc', 'SKILL.md'), '---\nname: nodesc\n---\nbody');
  const after = await (await app.api('/api/skills')).json();
  t.match(after.find((s: any) => s.id === 'broken'), { valid: false, error: /must equal its folder's name broken/ });
  t.match(after.find((s: any) => s.id === 'nodesc'), { valid: false, error: /needs description/ });
  const installed = await (await app.api('/api/skills/installed')).json();
  t.same(installed.map((s: any) => s.name).sort(), ['csv-insights', 'repo-map']);
  const checks = await envChecks(app);
  t.match(checks['skills:global'], { status: 'warn', detail: /2 of 4 global skills are invalid.*broken/ });

  const one = await (await app.api('/api/skills/csv-insights')).json();
  t.match(one, { name: 'csv-insights', content: /^---\nname: csv-insights/, body: /# CSV insights/ });
  t.equal((await app.api('/api/skills/nope')).status, 404);

  const search = await (await app.api('/api/skills/search?q=csv%20data')).json();
  t.equal(search.results[0].name, 'csv-insights', 'ranked by name first');
  const code = await (await app.api('/api/skills/search?q=code')).json();
  t.equal(code.results[0].name, 'repo-map', 'and by description');
  t.equal((await app.api('/api/skills/search')).status, 422, 'q is required');
  t.equal((await app.api('/api/skills/search?q=x&limit=51')).status, 422);
  t.equal((await app.api('/api/skills/scenario-resources?limit=0')).status, 422);
  const res = await (await app.api('/api/skills/scenario-resources?limit=1')).json();
  t.equal(res.items.length, 1);
  t.match((await (await app.api('/api/skills/scenario-resources')).json()).items, [{ skill: 'csv-insights', path: 'scripts/profile.mjs', kind: 'script' }]);
  const stats = await (await app.api('/api/skill-store/stats')).json();
  t.match(stats, { skills: 4, valid: 2, invalid: 2, by_source: { agentsvc: 2, local: 2 }, prompt_budget_tokens: 2000 });
  t.ok(stats.prompt_tokens > 0 && stats.prompt_tokens <= 2000);
});

t.test('the agent discovers a global skill, loads it with Skill and runs its script inside the computer', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const csv = 'region,amount\nnorth,10\nsouth,32\nnorth,8\n';
  t.equal((await app.api(`/api/sessions/${sid}/files/data.csv`, { method: 'PUT', json: { content: csv } })).status, 200);
  const { results, end } = await chat(
    app,
    model,
    sid,
    'what is in data.csv?',
    { toolCalls: [{ name: 'Skill', args: { name: 'csv-insights' } }] },
    { toolCalls: [{ name: 'Bash', args: { command: 'node .skills/csv-insights/scripts/profile.mjs data.csv' } }] },
    { text: ['3 rows; amount sums to 50'] },
  );
  t.equal(end.status, 'completed');
  const system = model.requests[0].messages[0].content;
  t.match(system, /## Skills/);
  t.match(system, /- csv-insights: Profile a CSV/, 'names and descriptions are in the system prompt');
  t.notMatch(system, /RFC 4180|node \.skills/, 'bodies are not');
  t.ok(offered(model, 0).includes('Skill'));
  t.match(results[0], { status: 'done', result: /<skill name="csv-insights" dir=".skills\/csv-insights">[\s\S]*\.skills\/csv-insights\/scripts\/profile\.mjs[\s\S]*# CSV insights/ });
  t.match(results[1], { status: 'done', result: /data\.csv: 3 rows, 2 columns[\s\S]*amount: number.*sum 50/ }, 'the script ran in the sandbox');
  const stats = await (await app.api(`/api/sessions/${sid}/skill-stats`)).json();
  t.match(stats, { loads: { 'csv-insights': 1 }, total_loads: 1, failed_loads: 0 });
  const listed = await (await app.api(`/api/sessions/${sid}/skills`)).json();
  t.match(listed.find((s: any) => s.name === 'csv-insights'), { scope: 'session', source: 'installed/csv-insights', dir: '.skills/csv-insights' });

  // An unknown skill is a tool error the model can correct.
  const again = await chat(app, model, sid, 'again', { toolCalls: [{ name: 'Skill', args: { name: 'nope' } }] }, { text: ['ok'] });
  t.match(again.results[0], { status: 'error', result: /No skill named "nope"\. Available skills: .*csv-insights/ });
});

t.test('session skills: upload, listed to the agent, path tricks and bad front matter refused, install and resync', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_SKILL_UPLOAD_LIMIT: '2048' });
  const sid = await createSession(app);
  const up = (body: unknown) => app.api(`/api/sessions/${sid}/skills:upload`, { method: 'POST', json: body });
  const files = [
    { path: 'SKILL.md', content: skillMd('greeter', 'Greets people by name in their language.', 'Run `sh .skills/greeter/scripts/hi.sh NAME`.') },
    { path: 'scripts/hi.sh', content: '#!/bin/sh\necho "hello, $1"\n' },
  ];
  const r = await up({ name: 'greeter', files });
  t.equal(r.status, 200);
  t.same(await r.json(), { name: 'greeter', skill_dir: '.skills/greeter', file_count: 2, overwritten: false });
  t.same((await (await up({ name: 'greeter', files })).json()).overwritten, true);
  t.equal(await (await app.api(`/api/sessions/${sid}/files/.skills/greeter/scripts/hi.sh`)).text(), '#!/bin/sh\necho "hello, $1"\n');

  const bad = async (body: unknown, status: number, detail: RegExp, what: string) => {
    const res = await up(body);
    t.equal(res.status, status, what);
    const b = await res.json();
    t.match(JSON.stringify(b.detail), detail, what);
    t.equal(b.code, status === 422 ? 'VALIDATION_ERROR' : 'PAYLOAD_TOO_LARGE', 'the error body of docs/errors.md');
  };
  await bad({ name: 'greeter', files: [...files, { path: '../../escape.sh', content: 'x' }] }, 422, /inside the skill folder/, 'a path with ..');
  await bad({ name: 'greeter', files: [...files, { path: '/etc/passwd', content: 'x' }] }, 422, /relative/, 'an absolute path');
  await bad({ name: 'greeter', files: [...files, { path: 'a\\..\\..\\b', content: 'x' }] }, 422, /backslash/, 'a backslash path');
  await bad({ name: '../x', files }, 422, /a-z, 0-9/, 'a bad name');
  await bad({ name: 'other', files }, 422, /must equal its folder's name other/, 'a name that differs from SKILL.md');
  await bad({ name: 'greeter', files: [{ path: 'SKILL.md', content: 'no front matter' }] }, 422, /front matter/, 'no front matter');
  await bad({ name: 'greeter', files: [{ path: 'README.md', content: 'x' }] }, 422, /SKILL\.md is missing/, 'no SKILL.md');
  await bad({ name: 'greeter', files: [...files, { path: 'big.txt', content: 'x'.repeat(3000) }] }, 413, /over the limit of 2048/, 'over the size limit');
  t.equal((await app.api(`/api/sessions/${sid}/files/escape.sh`)).status, 404, 'nothing was written');
  t.equal((await app.api(`/api/sessions/${sid}/files/.skills/greeter/big.txt`)).status, 404);
  t.equal(await (await app.api(`/api/sessions/${sid}/files/.skills/greeter/scripts/hi.sh`)).text(), '#!/bin/sh\necho "hello, $1"\n', 'the skill is unchanged');
  // A description over the format's 1024 characters, as real publishers ship (Anthropic's
  // claude-api: 1,068): accepted, not refused.
  t.equal((await up({ name: 'longdesc', files: [{ path: 'SKILL.md', content: skillMd('longdesc', 'y'.repeat(1068)) }] })).status, 200, 'a long description is accepted');
  t.equal((await app.api(`/api/sessions/${sid}/files/.skills/longdesc`, { method: 'DELETE' })).status, 200);

  // A link planted where the skill folder goes does not carry the upload outside the session.
  const other = await createSession(app);
  const userId = (await (await app.api(`/api/sessions/${other}`)).json()).user_id;
  const outside = mkdtempSync(join(tmpdir(), 'outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  mkdirSync(join(app.config.workspaces, userId, other), { recursive: true });
  symlinkSync(outside, join(app.config.workspaces, userId, other, '.skills'));
  const linked = await app.api(`/api/sessions/${other}/skills:upload`, { method: 'POST', json: { name: 'greeter', files } });
  t.equal(linked.status, 422, 'a planted link is refused');
  t.same(readdirSync(outside), [], 'nothing was written through it');

  // Another user's session is a 404.
  const stranger = await app.newUser();
  t.equal((await app.api(`/api/sessions/${sid}/skills:upload`, { method: 'POST', json: { name: 'greeter', files }, key: stranger.key })).status, 404);
  t.equal((await app.api(`/api/sessions/${sid}/skills`, { key: stranger.key })).status, 404);

  const { results } = await chat(
    app,
    model,
    sid,
    'greet Ada',
    { toolCalls: [{ name: 'Skill', args: { name: 'greeter' } }] },
    { toolCalls: [{ name: 'Bash', args: { command: 'sh .skills/greeter/scripts/hi.sh Ada' } }] },
    { text: ['done'] },
  );
  t.match(model.requests[0].messages[0].content, /- greeter: Greets people/);
  t.match(results[0].result, /<skill name="greeter"[\s\S]*\.skills\/greeter\/scripts\/hi\.sh[\s\S]*Run `sh/);
  t.match(results[1].result, /hello, Ada/);

  const inst = await (await app.api(`/api/sessions/${sid}/skills/install`, { method: 'POST' })).json();
  t.same(inst.installed.sort(), ['csv-insights', 'repo-map']);
  t.same((await (await app.api(`/api/sessions/${sid}/skills/install`, { method: 'POST' })).json()).current.sort(), ['csv-insights', 'repo-map']);
  // Installs at once (the bad-input campaign sent them): serialised, never a 500 mid-copy.
  await app.api(`/api/sessions/${sid}/files/.skills/repo-map/.agentsvc-installed`, { method: 'PUT', json: { content: 'stale\n' } });
  const many = await Promise.all(Array.from({ length: 30 }, () => app.api(`/api/sessions/${sid}/skills/install`, { method: 'POST' })));
  t.same(many.map((r) => r.status), Array(30).fill(200), 'thirty installs at once');
  t.same((await (await app.api(`/api/sessions/${sid}/skills/install`, { method: 'POST' })).json()).current.sort(), ['csv-insights', 'repo-map']);
  // A broken session skill shows up in resync's answer.
  await app.api(`/api/sessions/${sid}/files/.skills/bad/SKILL.md`, { method: 'PUT', json: { content: skillMd('nomatch', 'x') } });
  const rs = await (await app.api(`/api/sessions/${sid}/skills:resync`, { method: 'POST' })).json();
  t.match(rs, { detail: /3 session skills, 1 invalid/, invalid: [{ name: 'bad', error: /must equal/ }] });
  t.same(rs.session_skills.sort(), ['csv-insights', 'greeter', 'repo-map']);
});
