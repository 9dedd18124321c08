// Issue #8: writes through dangling symlink chains, and links swapped in between check and open.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { writeTool } from '../../src/core/tools/files/index.js';
import type { ToolContext } from '../../src/core/tools/types.js';
import { filesFixture, uploadForm } from '../helpers/files.js';

function outsideDir(t: { teardown(fn: () => unknown): void }): string {
  const outside = mkdtempSync(join(tmpdir(), 'agentsvc-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  return outside;
}

t.test('a dangling link chain (x -> a/pwned, a -> outside) is never written through', async (t) => {
  const { app, dir, base, id, put } = await filesFixture(t);
  const outside = outsideDir(t);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'inside.txt'), 'in');
  symlinkSync(outside, join(dir, 'a'));
  symlinkSync('a/pwned', join(dir, 'x'));
  mkdirSync(join(dir, '.share'));
  symlinkSync('../a/pwned', join(dir, '.share/d'));
  symlinkSync('../x', join(dir, '.share/y'));

  const r = await put('x', 'pwned');
  t.equal(r.status, 422, 'PUT through the chain');
  t.equal((await r.json()).code, 'PATH_OUTSIDE_WORKSPACE');
  t.equal((await put('a/pwned', 'pwned')).status, 422, 'PUT through the link to the folder');

  const up = await app.api(`${base}/upload/`, { method: 'POST', body: uploadForm([['pwned', 'f.txt']], ['x']) });
  t.equal(up.status, 422, 'upload onto the chain');
  for (const share_folder of ['d', 'y', 'd/sub']) {
    const s = await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'inside.txt', share_folder } });
    t.equal(s.status, 422, `share-file into ${share_folder}`);
  }
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const ctx = { workspace: new SessionFolders(join(app.home, 'workspaces'), null).forSession(me, id) } as unknown as ToolContext;
  await t.rejects(writeTool.execute({ file_path: 'x', content: 'pwned' }, ctx), /outside the workspace/, 'Write through the chain');
  await t.rejects(writeTool.execute({ file_path: '.share/d/new.txt', content: 'pwned' }, ctx), /outside the workspace/, 'Write under the chain');
  t.same(readdirSync(outside), [], 'nothing was created outside');
});

t.test('a dangling link inside the workspace is refused, not written through', async (t) => {
  const { dir, put } = await filesFixture(t);
  mkdirSync(dir, { recursive: true });
  symlinkSync('later/file.txt', join(dir, 'inner'));
  const r = await put('inner', 'x');
  t.equal(r.status, 422);
  t.equal((await r.json()).code, 'DANGLING_SYMLINK');
  t.notOk(existsSync(join(dir, 'later')));
});

t.test('a folder swapped for a link to the outside while writing never lets a write out', async (t) => {
  const { dir, put } = await filesFixture(t);
  const outside = outsideDir(t);
  mkdirSync(dir, { recursive: true });
  // Another process flips `d` between a real folder and a link to the outside as fast as it can.
  const flipper = spawn('sh', ['-c', `cd "${dir}" && while :; do rm -rf d; mkdir d; rm -rf d; ln -s "${outside}" d; done`], { stdio: 'ignore' });
  t.teardown(() => flipper.kill('SIGKILL'));
  const statuses = new Set<number>();
  const until = Date.now() + 4000;
  let n = 0;
  while (Date.now() < until && readdirSync(outside).length === 0) {
    const batch = await Promise.all(Array.from({ length: 8 }, (_, i) => put(`d/f${n}-${i}.txt`, 'pwned')));
    batch.forEach((r) => statuses.add(r.status));
    n++;
  }
  flipper.kill('SIGKILL');
  t.same(readdirSync(outside), [], `nothing landed outside after ${n * 8} writes (statuses ${[...statuses].join(', ')})`);
  t.notOk([...statuses].some((s) => s >= 500), 'no 5xx');
});
