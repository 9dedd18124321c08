import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
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
  const starter = resolve('templates/plugin-starter/index.mjs');
  const { app, model } = await buildWithModel(t, { AGENTSVC_PLUGINS: [starter, wrongShape, throws, join(dir, 'missing.mjs')].join(',') });
  t.ok(app.service.tools.get('WordCount'), 'the starter plugin registered its tool');
  t.notOk(app.service.tools.get('HalfDone'), 'a plugin that throws leaves no tools behind');
  t.equal(app.service.warnings.filter((w) => /skipped/.test(w)).length, 3);
  t.match(app.service.warnings.join('\n'), /wrong\.mjs skipped: the default export must be/);

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
