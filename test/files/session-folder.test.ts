// Issue #8: the session folder (or the user folder) planted as a symlink must never be followed.
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { sessionHostDir, userFolderDir } from '../../src/core/files/paths.js';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { globTool } from '../../src/core/tools/files/glob.js';
import { grepTool } from '../../src/core/tools/files/grep.js';
import { editTool, readTool, writeTool } from '../../src/core/tools/files/index.js';
import type { ToolContext } from '../../src/core/tools/types.js';
import { build, type TestApp } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';
import { uploadForm } from '../helpers/files.js';

type Call = [method: string, path: string, init?: { json?: unknown; form?: () => FormData }];

/** Every file endpoint, aimed at what a planted link would expose. */
const calls: Call[] = [
  ['GET', 'files/admin.key'],
  ['GET', 'ls/'],
  ['GET', 'ls/db'],
  ['PUT', 'files/config.json', { json: { content: '{"AGENTSVC_PLUGINS":"/tmp/evil.mjs"}' } }],
  ['DELETE', 'files/admin.key'],
  ['POST', 'files/admin.key/rename', { json: { new_name: 'stolen' } }],
  ['POST', 'files/admin.key/copy'],
  ['POST', 'upload/', { form: () => uploadForm([['pwned', 'pwned.txt']]) }],
  ['GET', 'download-dir/'],
  ['POST', 'share-file', { json: { source_path: 'admin.key' } }],
];

const ctxOf = (app: TestApp, userId: string, sessionId: string) =>
  ({
    workspace: new SessionFolders(join(app.home, 'workspaces'), null).forSession(userId, sessionId),
    userId,
    sessionId,
    callId: 'tc_test',
    signal: new AbortController().signal,
  }) as unknown as ToolContext;

async function refusedEverywhere(t: Test, app: TestApp, sid: string, userId: string, secret: string) {
  const before = JSON.stringify(readdirSync(app.home).sort());
  for (const [method, path, init] of calls) {
    const r = await app.api(`/api/sessions/${sid}/${path}`, { method, json: init?.json, body: init?.form?.() });
    const text = await r.text();
    t.equal(r.status, 422, `${method} ${path}`);
    t.match(text, '"code":"WORKSPACE_NOT_A_DIRECTORY"', `${method} ${path} code`);
    t.notMatch(text, secret, `${method} ${path} does not leak`);
  }
  for (const [tool, args] of [
    [readTool, { file_path: 'admin.key' }],
    [writeTool, { file_path: 'config.json', content: '{}' }],
    [editTool, { file_path: 'admin.key', old_string: 'sk', new_string: 'xx' }],
  ] as const) {
    await t.rejects((tool.execute as (a: unknown, c: ToolContext) => Promise<string>)(args, ctxOf(app, userId, sid)), /symbolic link|not a directory/, `${tool.name} refused`);
  }
  await t.rejects(ctxOf(app, userId, sid).workspace.files.read('admin.key'), /symbolic link|not a directory/, 'the file layer (plugins) refused');
  for (const [tool, args] of [
    [grepTool, { pattern: 'sk' }],
    [globTool, { pattern: '*' }],
  ] as const)
    await t.rejects((tool.execute as (a: unknown, c: ToolContext) => Promise<string>)(args, ctxOf(app, userId, sid)), /symbolic link|not a directory/, `${tool.name} refused`);
  t.equal(JSON.stringify(readdirSync(app.home).sort()), before, 'nothing created in AGENTSVC_HOME');
  t.equal(readFileSync(join(app.home, 'admin.key'), 'utf8').trim(), app.adminKey, 'admin.key untouched');
}

t.test('a session folder planted as a symlink to AGENTSVC_HOME is refused, never followed', async (t) => {
  const app = await build(t);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const s1 = await createSession(app);
  const s2 = await createSession(app);
  // What `ln -s $AGENTSVC_HOME ../S2` run by Bash in S1 leaves: S2's folder does not exist yet.
  t.equal((await app.api(`/api/sessions/${s1}/ls/`)).status, 200);
  const s2dir = sessionHostDir(app.home, me, s2);
  t.notOk(existsSync(s2dir));
  symlinkSync(app.home, s2dir);
  await refusedEverywhere(t, app, s2, me, app.adminKey);
  t.ok(lstatSync(s2dir).isSymbolicLink(), 'the link is left as it is (deleting the session removes it)');

  // Deleting the session removes the link only.
  t.equal((await app.api(`/api/sessions/${s2}`, { method: 'DELETE' })).status, 200);
  t.notOk(existsSync(s2dir));
  t.ok(existsSync(join(app.home, 'admin.key')));
});

t.test('a session folder that is a link to a sibling session, or a file, is refused', async (t) => {
  const app = await build(t);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const s1 = await createSession(app);
  const s2 = await createSession(app);
  const s3 = await createSession(app);
  mkdirSync(sessionHostDir(app.home, me, s1), { recursive: true });
  writeFileSync(join(sessionHostDir(app.home, me, s1), 'admin.key'), 'other-session-secret');
  symlinkSync(s1, sessionHostDir(app.home, me, s2));
  writeFileSync(sessionHostDir(app.home, me, s3), 'a file');
  await refusedEverywhere(t, app, s2, me, 'other-session-secret');
  await refusedEverywhere(t, app, s3, me, 'other-session-secret');
});

t.test('a user folder planted as a symlink is refused', async (t) => {
  const app = await build(t);
  const bob = await app.newUser();
  const sid = await createSession(app, bob.key);
  const elsewhere = mkdtempSync(join(tmpdir(), 'agentsvc-elsewhere-'));
  t.teardown(() => rmSync(elsewhere, { recursive: true, force: true }));
  mkdirSync(join(elsewhere, sid));
  writeFileSync(join(elsewhere, sid, 'admin.key'), 'elsewhere-secret');
  mkdirSync(join(app.home, 'workspaces'), { recursive: true });
  symlinkSync(elsewhere, userFolderDir(app.home, bob.userId));
  const r = await app.api(`/api/sessions/${sid}/files/admin.key`, { key: bob.key });
  t.equal(r.status, 422);
  t.same(await r.json(), { detail: 'the user workspace folder is a symbolic link, not a directory; it is not followed', code: 'WORKSPACE_NOT_A_DIRECTORY' });
  const put = await app.api(`/api/sessions/${sid}/files/new.txt`, { method: 'PUT', json: { content: 'x' }, key: bob.key });
  t.equal(put.status, 422);
  t.same(readdirSync(join(elsewhere, sid)), ['admin.key'], 'nothing written through the link');
  await t.rejects(readTool.execute({ file_path: 'admin.key' }, ctxOf(app, bob.userId, sid)), /symbolic link/);
});
