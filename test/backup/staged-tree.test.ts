import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { EntryRefused, entryPlace } from '../../src/features/backup/archive.js';
import { StagedTree } from '../../src/features/backup/staged-tree.js';

/**
 * The two checks a restore makes of every entry (docs/backup.md): its name and type by the
 * format's rules (entryPlace), and its path opened without following any link (StagedTree).
 */

const b = (s: string) => Buffer.from(s);

t.test('entryPlace: what an archive may hold', async (t) => {
  const ok: [string, string, string | undefined, unknown][] = [
    ['home/config.json', 'file', undefined, { kind: 'file', place: { area: 'home', rel: 'config.json' } }],
    ['home/skills/one/SKILL.md', 'file', undefined, { kind: 'file', place: { area: 'home', rel: 'skills/one/SKILL.md' } }],
    ['home/skills/', 'directory', undefined, { kind: 'directory', place: { area: 'home', rel: 'skills' } }],
    ['snapshots/u/s.git/HEAD', 'file', undefined, { kind: 'file', place: { area: 'snapshots', rel: 'u/s.git/HEAD' } }],
    ['users/u_1/s/leak', 'symlink', '/etc/hostname', { kind: 'symlink', place: { area: 'users', user: 'u_1', rel: 's/leak' } }],
    ['db/turns/000001', 'file', undefined, { kind: 'file', place: { area: 'db', table: 'turns' } }],
  ];
  for (const [name, type, link, want] of ok) t.same(entryPlace(name, type, link), want, name);
  const refused: [string, string | null, string | undefined, RegExp][] = [
    ['home/evil', 'symlink', '/outside', /"home\/evil" is a symbolic link \(to "\/outside"\); links are restored only in users' trees/],
    ['snapshots/evil', 'symlink', '/outside', /is a symbolic link/],
    ['home/skills/h', 'link', '/etc/passwd', /is a link entry; a backup holds only files, folders and symbolic links/],
    ['users/u/s/dev', 'character-device', undefined, /is a character-device entry/],
    ['users/u/s/fifo', 'fifo', undefined, /is a fifo entry/],
    ['../x', 'file', undefined, /is not a plain relative name/],
    ['/etc/cron.d/x', 'file', undefined, /is not a plain relative name/],
    ['home/skills/../../x', 'file', undefined, /is not a plain relative name/],
    ['users/u//x', 'file', undefined, /is not a plain relative name/],
    ['users/u/./x', 'file', undefined, /is not a plain relative name/],
    ['home/run/url', 'file', undefined, /is not one of home\/'s config\.json, admin\.key, frontend_config, skills, solutions/],
    ['home/config.json', 'symlink', '/etc/shadow', /is a symbolic link/],
    ['home/admin.key/x', 'file', undefined, /is not the file home\/admin\.key/],
    ['users/.snapshots/x', 'file', undefined, /does not name a user folder/],
    ['users/u', 'file', undefined, /is not in home\/, snapshots\/, users\/<id>\/ or db\//],
    ['etc/passwd', 'file', undefined, /is not in home\//],
    ['db/turns', 'file', undefined, /is not a table piece/],
    ['users/u/s/empty', 'symlink', '', /without a target/],
    [`users/u/${'d/'.repeat(300)}x`, 'file', undefined, /more than 256 folders deep/],
  ];
  for (const [name, type, link, message] of refused) {
    let thrown: unknown = null;
    try {
      entryPlace(name, type, link);
    } catch (e) {
      thrown = e;
    }
    t.ok(thrown instanceof EntryRefused, `${name} (${type}): refused`);
    t.match((thrown as Error)?.message, message, `${name} (${type}): ${(thrown as Error)?.message}`);
  }
});

t.test('StagedTree: no entry is written through a link or a file', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'agentsvc-staged-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const outside = join(work, 'outside');
  mkdirSync(outside);
  const rootPath = join(work, 'root');
  mkdirSync(rootPath);
  const root = await open(rootPath, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  t.teardown(() => root.close());
  const tree = new StagedTree(root, (rel) => `users/${rel}`);
  t.teardown(() => tree.close());

  await tree.directory('u/s', 0o750);
  await tree.file('u/s/a.txt', 0o6644, new Date(1_000_000_000_000), [b('he'), b('llo')]);
  await tree.symlink('u/s/out', outside);
  t.equal(readFileSync(join(rootPath, 'u/s/a.txt'), 'utf8'), 'hello');
  t.equal(lstatSync(join(rootPath, 'u/s/a.txt')).mode & 0o7777, 0o644, 'set-ID bits dropped');
  t.equal(lstatSync(join(rootPath, 'u/s/a.txt')).mtimeMs, 1_000_000_000_000, 'mtime kept');
  t.equal(lstatSync(join(rootPath, 'u/s')).mode & 0o777, 0o750, 'folder mode kept');
  t.equal(readlinkSync(join(rootPath, 'u/s/out')), outside, 'a link is made as the link');

  await t.rejects(tree.file('u/s/out/x.txt', 0o644, new Date(), [b('x')]), /entry "users\/u\/s\/out\/x\.txt" goes through users\/u\/s\/out, which is a symbolic link or a file/);
  await t.rejects(tree.directory('u/s/out/sub', 0o755), /goes through users\/u\/s\/out/);
  await t.rejects(tree.symlink('u/s/out/l', '/'), /goes through users\/u\/s\/out/);
  await t.rejects(tree.file('u/s/a.txt/x', 0o644, new Date(), [b('x')]), /goes through users\/u\/s\/a\.txt/);
  t.notOk(existsSync(join(outside, 'x.txt')) || existsSync(join(outside, 'sub')) || existsSync(join(outside, 'l')), 'nothing written outside');

  // A link planted below the root by someone else (not by the archive) is not followed either.
  symlinkSync(outside, join(rootPath, 'planted'));
  await t.rejects(tree.file('planted/x.txt', 0o644, new Date(), [b('x')]), /goes through users\/planted, which is a symbolic link/);
  // Nor when a folder the writer had open on its chain is swapped for a link meanwhile: the open
  // descriptor is still the original folder, so the write lands inside the root, not outside.
  await tree.file('u/s/b.txt', 0o644, new Date(), [b('b')]);
  renameSync(join(rootPath, 'u/s'), join(rootPath, 's-moved'));
  symlinkSync(outside, join(rootPath, 'u/s'));
  await tree.file('u/s/c.txt', 0o644, new Date(), [b('c')]);
  t.notOk(existsSync(join(outside, 'c.txt')), 'not written through the swapped-in link');
  t.equal(readFileSync(join(rootPath, 's-moved/c.txt'), 'utf8'), 'c', 'written into the folder that was opened');
  renameSync(join(rootPath, 'u/s'), join(rootPath, 'link-aside'));
  renameSync(join(rootPath, 's-moved'), join(rootPath, 'u/s'));

  await t.rejects(tree.file('u/s/a.txt', 0o644, new Date(), [b('again')]), /entry "users\/u\/s\/a\.txt" is in it twice/);
  await t.rejects(tree.symlink('u/s/out', '/'), /is in it twice/);
  await t.rejects(tree.directory('u/s/out', 0o755), /is in it twice/);
  t.equal(readFileSync(join(rootPath, 'u/s/a.txt'), 'utf8'), 'hello', 'the first one stays');
});
