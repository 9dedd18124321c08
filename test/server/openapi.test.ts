/**
 * The OpenAPI document is what outside clients are generated from (issue #33): it must pass a real
 * linter (Redocly's recommended rules) and use the documented names, so a generated client works.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';
import t from 'tap';
import { build } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';

const repo = resolve(import.meta.dirname, '../..');

t.test('Redocly recommended rules: no errors, and the problems counted', async (t) => {
  const app = await build(t);
  const doc = await (await fetch(`${app.url}/api/openapi.json`)).json();
  // The interface fixes these paths: `/api/user/api-keys/` ends with a slash, and literal segments stand
  // where other paths have a parameter (`/api/prod_solution/agents/{id}` beside `{id}/session`).
  const config = await createConfig({ extends: ['recommended'], rules: { 'no-path-trailing-slash': 'off', 'no-ambiguous-paths': 'off' } });
  const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
  const count = (severity: string) => problems.filter((p) => p.severity === severity).length;
  const byRule = new Map<string, number>();
  for (const p of problems) byRule.set(`${p.severity} ${p.ruleId}`, (byRule.get(`${p.severity} ${p.ruleId}`) ?? 0) + 1);
  t.comment(`redocly: ${count('error')} errors, ${count('warn')} warnings: ${[...byRule].map(([k, n]) => `${k} ${n}`).join('; ')}`);
  for (const p of problems) t.comment(`${p.ruleId}: ${p.message} @ ${p.location[0]?.pointer}`);
  t.equal(count('error'), 0, 'no errors');
  t.equal(count('warn'), 0, 'no warnings');
});

t.test('a client generated from the document compiles and writes files under their real names', async (t) => {
  const app = await build(t);
  const doc = await (await fetch(`${app.url}/api/openapi.json`)).json();
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-client-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'api.ts'), astToString(await openapiTS(doc)));
  // The smallest typed client: the path template and its parameters come from the generated types,
  // so a wrong parameter name (the old `{*}`) does not compile.
  writeFileSync(
    join(dir, 'client.ts'),
    [
      "import type { paths } from './api.js';",
      "type FilePath = '/api/sessions/{session_id}/files/{file_path}';",
      "type Params = paths[FilePath]['put']['parameters']['path'];",
      "type Body = NonNullable<paths[FilePath]['put']['requestBody']>['content']['application/json'];",
      "export function fill(template: FilePath, p: Params): string {",
      "  return template.replace(/\\{(\\w+)\\}/g, (_, k: keyof Params) => encodeURIComponent(String(p[k])).replace(/%2F/g, '/'));",
      '}',
      "export const body: Body = { content: 'generated' };",
      "export const url = fill('/api/sessions/{session_id}/files/{file_path}', { session_id: 'sess_x', file_path: 'docs/readme.md' });",
      '',
    ].join('\n'),
  );
  const tsc = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', join(dir, 'client.ts')], { encoding: 'utf8' });
  t.equal(tsc.status, 0, `the generated client compiles: ${tsc.stdout}${tsc.stderr}`);
  // Used as the generated types say: the file lands under its real name, not `{*}`.
  const sid = await createSession(app);
  const path = '/api/sessions/{session_id}/files/{file_path}'.replace('{session_id}', sid).replace('{file_path}', 'docs/readme.md');
  t.equal((await app.api(path, { method: 'PUT', json: { content: 'generated' } })).status, 200);
  t.same((await (await app.api(`/api/sessions/${sid}/ls/docs`)).json()).map((e: { name: string }) => e.name), ['readme.md']);
  t.ok(doc.paths['/api/sessions/{session_id}/files/{file_path}/rename']?.post, 'rename is its own operation');
  t.same(doc.paths['/api/health'].get.security, [], 'public routes need no key');
});
