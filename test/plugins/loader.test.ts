import t from 'tap';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';

t.test('plugins from the config list: loaded, shape-checked, broken ones skipped', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-plugins-'));
  const wrongShape = join(dir, 'wrong.mjs');
  writeFileSync(wrongShape, 'export default { hello: 1 };');
  const throws = join(dir, 'throws.mjs');
  writeFileSync(
    throws,
    `export default { name: 'half', register(api) {
       api.registerTool({ name: 'HalfDone', description: 'x', provider: 'integration', parameters: { type: 'object' }, execute: async () => 'x' });
       throw new Error('boom');
     } };`,
  );
  // Folders, as the starter says to list it (issue 31, defect 12: "Directory import" before):
  // the starter's by its package.json `main`, one by `exports` conditions, one with nothing.
  const starter = resolve('templates/plugin-starter');
  const exported = join(dir, 'exported');
  mkdirSync(join(exported, 'lib'), { recursive: true });
  writeFileSync(join(exported, 'package.json'), JSON.stringify({ type: 'module', exports: { '.': { import: './lib/plugin.mjs', require: './nope.cjs' } } }));
  writeFileSync(join(exported, 'lib', 'plugin.mjs'), "export default { name: 'exported', register() {} };");
  const empty = join(dir, 'empty');
  mkdirSync(empty);
  const { app, model } = await buildWithModel(t, { AGENTSVC_PLUGINS: [starter, exported, empty, wrongShape, throws, join(dir, 'missing.mjs')].join(',') });
  t.ok(app.service.tools.get('WordCount'), 'the starter plugin registered its tool');
  t.ok(app.service.plugins.loaded.some((p) => p.name === 'exported'), "a folder's package.json exports are followed");
  t.notOk(app.service.tools.get('HalfDone'), 'a plugin that throws leaves no tools behind');
  t.equal(app.service.warnings.filter((w) => /skipped/.test(w)).length, 4, app.service.warnings.join('\n'));
  t.match(app.service.warnings.join('\n'), /wrong\.mjs skipped: the default export must be/);
  t.match(app.service.warnings.join('\n'), /empty skipped: the folder \S+empty has no plugin module/);

  // The plugin's tool runs in the loop like any other.
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script({ toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'one two three' } }, { name: 'WordCount', args: { file_path: 'a.txt' } }] }, { text: ['3'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'count' });
  await untilEnd(seen, sid);
  const results = seen.filter((e) => e.payload.patch_type === 'tool_result').map((e) => e.payload.data.result);
  t.equal(results[1], 'a.txt: 3 words');
});

t.test('a plugin provider: tools listed per session and changing between runs, a prompt section, no secrets in its config', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-plugins-'));
  const file = join(dir, 'provider.mjs');
  writeFileSync(
    file,
    `export const seen = {};
     let version = 1;
     export default { name: 'dyn', register(api) {
       seen.config = api.config;
       api.addPromptContributor({ name: 'dyn', contribute: () => 'The dyn plugin is here.' });
       api.registerProvider({
         name: 'dyn',
         tools: (scope) => [{ name: 'Dyn' + version, description: 'v' + version, provider: 'integration', parameters: { type: 'object' },
           execute: async () => { version++; return 'ran for ' + scope.sessionId; } }],
         health: async () => ({ status: 'ok', detail: 'v' + version }),
       });
       api.registerProvider({ name: 'broken', tools: () => { throw new Error('cannot list'); } });
     } };`,
  );
  const { app, model } = await buildWithModel(t, { AGENTSVC_PLUGINS: file, OPENAI_API_KEY: 'sk-secret-model-key' });
  const mod = await import(file);
  t.notMatch(JSON.stringify(mod.seen.config), /sk-secret-model-key|postgres:\/\//, 'the plugin config carries no secret');
  t.equal(mod.seen.config.model.default, 'fake-model');
  t.ok(Object.isFrozen(mod.seen.config));
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script({ toolCalls: [{ name: 'Dyn1', args: {} }] }, { text: ['ok'] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'one' });
  await untilEnd(seen, sid);
  const offered = (i: number) => (model.requests[i].tools ?? []).map((x: any) => x.function.name);
  t.ok(offered(0).includes('Dyn1'), 'the provider tool is offered');
  t.match(model.requests[0].messages[0].content, /The dyn plugin is here\./);
  t.equal(seen.filter((e) => e.payload.patch_type === 'tool_result').at(-1)?.payload.data.result, `ran for ${sid}`);
  await request(sock, 'chat:send', { session_id: sid, message: 'two' });
  await untilEnd(seen, sid, 20_000, 2);
  t.ok(offered(2).includes('Dyn2') && !offered(2).includes('Dyn1'), 'the next run sees the changed tool list');
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } }, 'a provider that fails to list is left out, the run goes on');
  t.same(await app.service.tools.health(), [{ provider: 'dyn', health: { status: 'ok', detail: 'v2' } }]);
});
