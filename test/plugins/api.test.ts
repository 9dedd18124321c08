import t from 'tap';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { chat, envChecks, offered } from './helpers.js';

t.test('agentsvc/plugin: the package exports the typed API (self-reference after build)', async (t) => {
  t.ok(existsSync('dist/src/features/plugin-host/api.d.ts'), 'types are built');
  const api = await import('agentsvc/plugin' as string);
  t.type(api.definePlugin, 'function');
  t.type(api.ToolError, 'function');
  t.ok(new api.ToolError('x').isToolError);
});

t.test('the starter: tool, prompt section, health check in /api/env/check, session end hook', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_PLUGINS: resolve('templates/plugin-starter/index.mjs') });
  t.same(app.service.plugins.loaded.map((p) => p.name), ['skills', 'mcp', 'integrations', 'starter'], 'first-party plugins load through the same loader');
  const sid = await createSession(app);
  await app.api(`/api/sessions/${sid}/files/a.txt`, { method: 'PUT', json: { content: 'one two three' } });
  const { results } = await chat(app, model, sid, 'count', { toolCalls: [{ name: 'WordCount', args: { file_path: 'a.txt' } }] }, { text: ['3'] });
  t.equal(results[0].result, 'a.txt: 3 words');
  t.match(model.requests[0].messages[0].content, /WordCount counts the words/);
  const checks = await envChecks(app);
  t.match(checks['starter:ready'], { status: 'ok', detail: 'WordCount ran 1 times; 0 sessions ended' });
  const one = await (await app.api('/api/env/check/starter:ready', { method: 'POST' })).json();
  t.match(one, { check_id: 'starter:ready', status: 'ok' });
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.match((await envChecks(app))['starter:ready'].detail, /; 1 sessions ended$/, 'onSessionEnd ran');
});

t.test('a third-party plugin from docs/plugins.md: session start, toolsChanged mid-run, failing checks, bad names', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-plugin-'));
  const file = join(dir, 'weather.mjs');
  writeFileSync(
    file,
    `/** @type {import('agentsvc/plugin').AgentsvcPlugin} */
     export default {
       name: 'weather',
       register(api) {
         const started = [];
         let extra = false;
         api.onSessionStart((s) => { started.push(s.sessionId); });
         api.registerProvider({
           name: 'weather',
           tools: () => [
             { name: 'Forecast', description: 'forecast', provider: 'integration', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
               async execute({ city }) { extra = true; api.toolsChanged(); return 'sunny in ' + city + ' (started: ' + started.length + ')'; } },
             ...(extra ? [{ name: 'Radar', description: 'radar', provider: 'integration', parameters: { type: 'object' }, execute: async () => 'clear' }] : []),
           ],
           health: async () => ({ status: 'fail', detail: 'upstream down' }),
         });
         api.addHealthCheck({ id: 'slow', run: () => new Promise(() => {}) });
         api.addHealthCheck({ id: 'throws', run: async () => { throw new Error('kaboom'); } });
         api.addHealthCheck({ id: 'who', run: async (viewer) => ({ status: 'ok', detail: viewer ? viewer.userId + ' admin=' + viewer.admin : 'nobody' }) });
       },
     };`,
  );
  const bad = join(dir, 'bad.mjs');
  writeFileSync(bad, `export default { name: 'Bad Name', register() {} };`);
  const { app, model } = await buildWithModel(t, { AGENTSVC_PLUGINS: `${file},${bad}` });
  t.match(app.service.warnings.join('\n'), /bad\.mjs skipped: plugin name "Bad Name" must be 1-64/);
  const sid = await createSession(app);
  const { results } = await chat(
    app,
    model,
    sid,
    'weather?',
    { toolCalls: [{ name: 'Forecast', args: { city: 'Oslo' } }] },
    { toolCalls: [{ name: 'Radar', args: {} }] },
    { text: ['ok'] },
  );
  t.equal(results[0].result, 'sunny in Oslo (started: 1)', 'sessionStart ran before the first tool listing');
  t.notOk(offered(model, 0).includes('Radar'));
  t.ok(offered(model, 1).includes('Radar'), 'a tool added mid-run is offered at the next model call');
  t.equal(results[1].result, 'clear');
  const checks = await envChecks(app);
  t.match(checks['plugin:weather'], { status: 'fail', detail: 'upstream down' });
  t.match(checks['weather:slow'], { status: 'fail', detail: /did not answer within/ });
  t.match(checks['weather:throws'], { status: 'fail', detail: 'kaboom' });
  // A check is told who asked, so per-user state can show a non-admin their own only.
  const me = await (await app.api('/api/auth/me')).json();
  t.match(checks['weather:who'], { status: 'ok', detail: `${me.id} admin=true` });
  const ann = await app.newUser();
  t.match((await envChecks(app, ann.key))['weather:who'], { status: 'ok', detail: `${ann.userId} admin=false` }, 'a non-admin is named as the viewer');
  t.match(await (await app.api('/api/env/check/weather:who', { method: 'POST', key: ann.key })).json(), { detail: `${ann.userId} admin=false` }, 'one check too');
});
