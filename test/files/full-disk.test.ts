/**
 * Writes are atomic (docs/trust-boundary.md) and a full disk is not bad input (docs/errors.md): on a small tmpfs
 * holding the workspaces, a write that does not fit answers 507 INSUFFICIENT_STORAGE (REST) or a
 * tool error (Write, Edit), and the file keeps its previous content, with no partial file beside
 * it. Mounting needs root (CI runs as root); elsewhere the test says why it skips.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { editTool, writeTool } from '../../src/core/tools/files/index.js';
import type { ToolContext } from '../../src/core/tools/types.js';
import { build } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';
import { needs } from '../helpers/needs.js';

const mnt = mkdtempSync(join(tmpdir(), 'agentsvc-fulldisk-'));
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0711', 'tmpfs', mnt]);
const skip = needs(t, 'the full-disk tests (a tmpfs mount)', mounted.status === 0 ? false : `cannot mount a tmpfs (${mounted.stderr?.toString().trim() || 'not root'})`);
t.teardown(() => {
  if (!skip) spawnSync('umount', ['-l', mnt]);
  rmdirSync(mnt);
});

/** Fill the tmpfs to the last block; returns a function that frees it again. */
function fill(): () => void {
  const filler = join(mnt, 'filler');
  spawnSync('sh', ['-c', `dd if=/dev/zero of=${filler} bs=4k 2>/dev/null; true`]);
  return () => rmSync(filler, { force: true });
}

t.test('a write that does not fit changes nothing: REST 507, tools a tool error', { skip }, async (t) => {
  const app = await build(t, { AGENTSVC_WORKSPACES: mnt });
  const userId = (await (await app.api('/api/auth/me')).json()).id;
  const sid = await createSession(app);
  const put = (content: string) => app.api(`/api/sessions/${sid}/files/notes.txt`, { method: 'PUT', json: { content } });
  t.equal((await put('original')).status, 200);
  const folder = join(mnt, userId, sid);
  const free = fill();
  t.teardown(free);

  const big = 'x'.repeat(256 * 1024);
  const r = await put(big);
  t.equal(r.status, 507, 'REST answers 507');
  t.match(await r.json(), { code: 'INSUFFICIENT_STORAGE', detail: /nothing was changed/ });
  t.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'original', 'the old content is whole');

  const ctx = {
    workspace: new SessionFolders(mnt, null).forSession(userId, sid),
    userId,
    sessionId: sid,
    callId: 'tc_test',
    signal: new AbortController().signal,
  } as unknown as ToolContext;
  await t.rejects(writeTool.execute({ file_path: 'notes.txt', content: big }, ctx), { isToolError: true, message: /no space left.*left as it was/ }, 'Write: a tool error');
  await t.rejects(
    editTool.execute({ file_path: 'notes.txt', old_string: 'original', new_string: big }, ctx),
    { isToolError: true, message: /no space left/ },
    'Edit: a tool error',
  );
  t.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'original', 'still the old content');
  t.same(readdirSync(folder).sort(), ['notes.txt'], 'no temporary or partial file left beside it');

  free();
  t.equal((await put(big)).status, 200, 'works again once space returns');
  t.equal(readFileSync(join(folder, 'notes.txt'), 'utf8').length, big.length);
  t.same(readdirSync(folder).sort(), ['notes.txt']);
});

t.test('an upload that does not fit leaves the existing file whole', { skip }, async (t) => {
  const app = await build(t, { AGENTSVC_WORKSPACES: mnt });
  const userId = (await (await app.api('/api/auth/me')).json()).id;
  const sid = await createSession(app);
  t.equal((await app.api(`/api/sessions/${sid}/files/up.bin`, { method: 'PUT', json: { content: 'before' } })).status, 200);
  const free = fill();
  t.teardown(free);
  const form = new FormData();
  form.append('files', new Blob([Buffer.alloc(512 * 1024, 1)]), 'up.bin');
  const r = await app.api(`/api/sessions/${sid}/upload/`, { method: 'POST', body: form });
  t.equal(r.status, 200, 'per-file outcomes');
  t.match(await r.json(), { uploaded: [], failed: [{ name: 'up.bin', error: /no space left.*nothing was changed/ }] }, 'the file is listed as failed, saying why');
  t.equal(readFileSync(join(mnt, userId, sid, 'up.bin'), 'utf8'), 'before', 'old content kept');
  t.same(readdirSync(join(mnt, userId, sid)), ['up.bin'], 'nothing partial left');
});
