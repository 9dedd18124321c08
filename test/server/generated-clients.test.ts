/**
 * Clients that outside teams generate from GET /api/openapi.json compile under `tsc --strict`, with
 * the three generators people use (openapi-typescript, @hey-api/openapi-ts, orval), and one of them
 * moves a file, a folder's ZIP and an export through the real service.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import t from 'tap';
import { build } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';

// Three generators and three strict compiles of a 300 KB document: minutes on a loaded 2-core machine.
t.setTimeout(600_000);

const repo = resolve(import.meta.dirname, '../..');
const bin = (p: string) => join(repo, 'node_modules', p);

function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 240_000 });
}

function tsc(file: string, cwd: string) {
  return run([bin('typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2022,dom,dom.iterable', file], cwd);
}

t.test('three generators, each output compiles strictly; the hey-api client runs files, ZIP and export', async (t) => {
  const app = await build(t);
  const doc = await (await fetch(`${app.url}/api/openapi.json`)).json();
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-gen-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const spec = join(dir, 'openapi.json');
  writeFileSync(spec, JSON.stringify(doc));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');

  mkdirSync(join(dir, 'oats'));
  writeFileSync(join(dir, 'oats/api.ts'), astToString(await openapiTS(doc)));
  const oats = tsc('oats/api.ts', dir);
  t.equal(oats.status, 0, `openapi-typescript output compiles: ${oats.stdout.slice(0, 2000)}`);

  const orval = run([bin('orval/dist/bin/orval.js'), '--input', spec, '--output', join(dir, 'orval/api.ts'), '--client', 'fetch', '--mode', 'single'], dir);
  t.equal(orval.status, 0, `orval generates: ${orval.stderr.slice(-2000)}`);
  const orvalTsc = tsc('orval/api.ts', dir);
  t.equal(orvalTsc.status, 0, `orval output compiles: ${orvalTsc.stdout.slice(0, 2000)}`);

  const hey = run([bin('@hey-api/openapi-ts/bin/run.js'), '-i', spec, '-o', join(dir, 'hey')], dir);
  t.equal(hey.status, 0, `@hey-api/openapi-ts generates: ${hey.stderr.slice(-2000)}`);
  const heyTsc = tsc('hey/index.ts', dir);
  t.equal(heyTsc.status, 0, `@hey-api output compiles: ${heyTsc.stdout.slice(0, 2000)}`);

  // The generated SDK used as a person would: files up and down, a folder as a ZIP, an export.
  const sid = await createSession(app);
  writeFileSync(
    join(dir, 'use.ts'),
    [
      "import { client } from './hey/client.gen';",
      "import { getSessionsBySessionIdDownloadDirByDirPath, getSessionsBySessionIdExport, getSessionsBySessionIdFilesByFilePath, putSessionsBySessionIdFilesByFilePath } from './hey/sdk.gen';",
      "client.setConfig({ baseUrl: process.env.URL, headers: { authorization: 'Bearer ' + process.env.KEY } });",
      'const session_id = process.env.SID as string;',
      "const put = await putSessionsBySessionIdFilesByFilePath({ path: { session_id, file_path: 'docs/a.txt' }, body: { content: 'generated' } });",
      "const got = await getSessionsBySessionIdFilesByFilePath({ path: { session_id, file_path: 'docs/a.txt' }, parseAs: 'text' });",
      "const zip = await getSessionsBySessionIdDownloadDirByDirPath({ path: { session_id, dir_path: 'docs' }, parseAs: 'arrayBuffer' });",
      "const exp = await getSessionsBySessionIdExport({ path: { session_id }, parseAs: 'arrayBuffer' });",
      'const magic = (b: unknown) => Buffer.from(b as ArrayBuffer).subarray(0, 2).toString();',
      'console.log(JSON.stringify({ put: put.response.status, text: got.data, zip: [zip.response.headers.get("content-type"), magic(zip.data)], exp: [exp.response.headers.get("content-type"), magic(exp.data)] }));',
      '',
    ].join('\n'),
  );
  // Not spawnSync: the service answering these calls runs in this process.
  const used = await promisify(execFile)(process.execPath, [bin('tsx/dist/cli.mjs'), 'use.ts'], { cwd: dir, env: { ...process.env, URL: app.url, KEY: app.adminKey, SID: sid }, timeout: 240_000 });
  t.same(JSON.parse(used.stdout.trim().split('\n').at(-1) ?? '{}'), { put: 200, text: 'generated', zip: ['application/zip', 'PK'], exp: ['application/zip', 'PK'] });
});
