import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { markQuota } from '../../src/core/files/command-quota.js';
import { SessionFolder } from '../../src/core/files/confine.js';
import { QuotaExceededError, StorageQuota } from '../../src/core/files/quota.js';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { confinedFs } from '../../src/core/files/folder-fs.js';

/**
 * The storage quota is a value (docs/storage-quota.md): each service makes its own and hands it to
 * the folders it writes through; nothing is configured process-wide. Two quotas over the same
 * workspaces root keep their own limits and counts, and a folder counts against the quota it was
 * made with.
 */
const root = mkdtempSync(join(tmpdir(), 'agentsvc-quota-value-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

t.test('two quotas over one root: each its own limit and count', async (t) => {
  const strict = new StorageQuota(root, 1000);
  const none = new StorageQuota(root, 0);
  const open = confinedFs(SessionFolder.of(root, 'user_a', 'sess_a', { quota: none }));
  const limited = confinedFs(SessionFolder.of(root, 'user_a', 'sess_a', { quota: strict }));
  t.same(await open.write('big.txt', 'x'.repeat(1500)), { created: true }, 'no limit through the folder made without one');
  t.equal(await strict.used('user_a'), 1500, 'counted by the quota asked');
  await t.rejects(limited.write('more.txt', 'y'), new QuotaExceededError(1500, 1000, 1), 'past the limit through the folder made with it');
  t.equal(await limited.stat('more.txt'), null, 'nothing written');
  t.equal(strict.limitBytes, 1000);
  t.equal(none.limitBytes, 0);
  await open.remove('big.txt');
  strict.set('user_a', 0);
  t.same(await limited.write('fits.txt', 'z'.repeat(600)), { created: true });
  t.equal(await strict.used('user_a'), 600, 'the write is recorded in the quota it was checked against');
  await t.rejects(limited.write('fits.txt', 'z'.repeat(1200)), { code: 'QUOTA_EXCEEDED' }, 'a replacement counts what it adds');
  t.same(await limited.write('fits.txt', 'z'.repeat(1000)), { created: false });
  t.equal(await strict.used('user_a'), 1000);
});

t.test('the session folders hand their quota to every folder they make', async (t) => {
  const quota = new StorageQuota(root, 100);
  const folders = new SessionFolders(root, null, quota);
  t.equal(folders.quota, quota);
  const ws = folders.forSession('user_b', 'sess_b');
  // Counted before any write (a count taken during one would see its temp file).
  t.equal(await quota.used('user_b'), 0);
  t.equal(ws.folder.account?.quota, quota, "a run's session folder");
  t.equal(ws.folder.account?.user, 'user_b');
  t.equal(folders.folder('user_b', 'sess_b').account?.quota, quota, 'the file endpoints\' folder');
  await t.rejects(ws.files.write('a.txt', 'a'.repeat(101)), { code: 'QUOTA_EXCEEDED' }, 'the file tools and the plugins\' workspace');
  await t.rejects(folders.sessionFs('user_b', 'sess_b').write('a.txt', 'a'.repeat(101)), { code: 'QUOTA_EXCEEDED' }, "the plugins' files");
  const home = folders.home({ userId: 'user_b', root: '/workspace', exec: async () => ({}) as never });
  await t.rejects(home.write('.profile', 'p'.repeat(101)), { code: 'QUOTA_EXCEEDED' }, "the computer home's files");
  t.same(await ws.files.write('a.txt', 'a'.repeat(100)), { created: true }, 'up to the quota');
  t.equal(new SessionFolders(root, null).quota.limitBytes, 0, 'without one given: a quota of its own with no limit');
});

t.test('a command is marked only under a quota with a limit', async (t) => {
  t.equal(await markQuota(undefined), null, 'a folder made without a quota');
  t.equal(await markQuota({ quota: new StorageQuota(root, 0), user: 'user_c' }), null, 'no limit');
  const quota = new StorageQuota(root, 5000);
  await confinedFs(SessionFolder.of(root, 'user_c', 'sess_c', { quota })).write('f.txt', 'f');
  const mark = await markQuota({ quota, user: 'user_c' });
  t.equal(mark?.limit, 5000);
  t.same([...(mark?.seen.keys() ?? [])].sort(), ['sess_c', 'sess_c/f.txt']);
});
