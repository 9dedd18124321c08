import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { EMPTY_TREE, Snapshots } from '../../src/features/timetravel/snapshots.js';

/**
 * The snapshot store keeps no ref per snapshot and packs in the background (loose objects and the
 * open pack repacked into one; large packs kept): every tree a checkpoint names must survive that,
 * exactly.
 */
const packsOf = (gitDir: string) => readdirSync(join(gitDir, 'objects', 'pack')).sort();
const verifyPack = (gitDir: string, pack: string) => execFileSync('git', ['verify-pack', '-v', join(gitDir, 'objects', 'pack', pack)], { encoding: 'utf8' });

/** A fresh store root with the session folder user_t/sess_t, removed after the test. */
function store(t: { teardown(fn: () => unknown): void }, fileLimit = 1 << 20) {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-snaps-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'user_t', 'sess_t');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return { root, dir, snaps: new Snapshots(root, { fileLimit }) };
}

t.test('packing keeps every snapshot: every tree restores exactly after packing', async (t) => {
  const { root, dir, snaps } = store(t);
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  const first = await snaps.take('user_t', 'sess_t');
  const trees: string[] = [];
  let notes = '';
  // 3 objects per snapshot (blob, tree, root tree): past 64 loose objects a pack starts at once.
  for (let i = 0; i < 40; i++) {
    notes += `line ${i} ${'x'.repeat(i)}\n`;
    mkdirSync(join(dir, 'log'), { recursive: true });
    writeFileSync(join(dir, 'log', 'notes.txt'), notes);
    trees.push((await snaps.take('user_t', 'sess_t')).tree);
  }
  await snaps.idle();
  const gitDir = join(root, '.snapshots', 'user_t', 'sess_t.git');
  const count = execFileSync('git', [`--git-dir=${gitDir}`, 'count-objects', '-v'], { encoding: 'utf8' });
  t.match(count, /^count: 0$/m, 'nothing left loose once idle');
  // The pack made at 64 loose objects was repacked with the rest at idle: one pack, where the 40
  // versions of notes.txt are deltas of one whole copy (two packs would hold two copies).
  t.match(count, /^packs: 1$/m, `one pack: ${count}`);
  const pack = packsOf(gitDir).find((n) => n.endsWith('.idx'))!;
  const blobs = verifyPack(gitDir, pack).split('\n').filter((l) => / blob /.test(l));
  // verify-pack: `sha type size packed offset` for a whole object, `... depth base` for a delta.
  const whole = blobs.map((l) => l.trim().split(/\s+/)).filter((f) => f.length === 5);
  t.same(whole.filter((f) => Number(f[2]) > 100).map((f) => f[2]), [String(notes.length)], 'one whole copy of notes.txt (the newest; early versions too small to delta stay whole)');
  t.ok(blobs.length - whole.length >= 34, `the other versions are deltas (${blobs.length - whole.length})`);
  t.notOk(packsOf(gitDir).some((n) => n.endsWith('.keep') || n.endsWith('.bitmap')), 'a small pack stays open; no bitmap (no refs to walk)');
  t.notOk(existsSync(join(gitDir, 'refs', 'snapshots')), 'no ref per snapshot');
  t.equal(execFileSync('git', [`--git-dir=${gitDir}`, 'config', 'gc.auto'], { encoding: 'utf8' }).trim(), '0', 'the store never gcs on its own');

  t.equal(await snaps.restore('user_t', 'sess_t', first.tree), 1);
  t.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'one\n');
  t.notOk(existsSync(join(dir, 'log', 'notes.txt')), 'a file made later is removed');
  for (const i of [19, 0, 38, 7, 39]) {
    await snaps.restore('user_t', 'sess_t', trees[i]);
    t.equal(readFileSync(join(dir, 'log', 'notes.txt'), 'utf8'), notes.split('\n').slice(0, i + 1).join('\n') + '\n', `version ${i + 1}, byte for byte`);
  }
  t.same(readdirSync(dir).sort(), ['a.txt', 'log']);
  await snaps.remove('user_t', 'sess_t');
  t.notOk(existsSync(gitDir), 'removed with the session');
});

t.test('a large pack is kept (never rewritten); later edits pack beside it and restore', async (t) => {
  const { root, dir, snaps } = store(t, 64 << 20);
  const big = randomBytes(9 << 20);
  writeFileSync(join(dir, 'big.bin'), big);
  const first = await snaps.take('user_t', 'sess_t');
  await snaps.idle();
  const gitDir = join(root, '.snapshots', 'user_t', 'sess_t.git');
  const base = packsOf(gitDir).filter((n) => n.endsWith('.keep'));
  t.equal(base.length, 1, 'the 9 MiB first pack is kept');
  const trees: string[] = [];
  for (let i = 0; i < 5; i++) {
    writeFileSync(join(dir, 'small.txt'), `edit ${i}\n`.repeat(i + 1));
    trees.push((await snaps.take('user_t', 'sess_t')).tree);
    await snaps.idle();
  }
  const packs = packsOf(gitDir).filter((n) => n.endsWith('.pack'));
  t.equal(packs.length, 2, `the kept pack and one open pack: ${packs.join(', ')}`);
  t.ok(packs.includes(base[0].replace(/\.keep$/, '.pack')), 'the kept pack is the same file: not rewritten');
  await snaps.restore('user_t', 'sess_t', trees[2]);
  t.equal(readFileSync(join(dir, 'small.txt'), 'utf8'), 'edit 2\n'.repeat(3));
  await snaps.restore('user_t', 'sess_t', first.tree);
  t.notOk(existsSync(join(dir, 'small.txt')), 'back to the first checkpoint');
  t.same(readFileSync(join(dir, 'big.bin')), big, 'the large file from the kept pack, byte for byte');
});

t.test('an empty workspace needs no store; an unchanged one no git; a change is always caught', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-snaps-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'user_t', 'sess_e');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const gitDir = join(root, '.snapshots', 'user_t', 'sess_e.git');
  const snaps = new Snapshots(root, { fileLimit: 1 << 20 });
  t.same(await snaps.take('user_t', 'sess_e'), { tree: EMPTY_TREE, files: 0, skipped: [] });
  t.notOk(existsSync(gitDir), 'no store for an empty workspace');
  t.same(await snaps.files('user_t', 'sess_e', EMPTY_TREE), []);

  writeFileSync(join(dir, 'a.txt'), 'one\n');
  const a = await snaps.take('user_t', 'sess_e');
  const objects = () => execFileSync('git', [`--git-dir=${gitDir}`, 'count-objects', '-v'], { encoding: 'utf8' });
  const before = objects();
  const again = await snaps.take('user_t', 'sess_e');
  t.equal(again.tree, a.tree, 'unchanged: the same tree');
  t.equal(objects(), before);
  // Same size, rewritten in place: the signature (mtime/ctime) changes, git is asked, content decides.
  writeFileSync(join(dir, 'a.txt'), 'two\n');
  const b = await snaps.take('user_t', 'sess_e');
  t.not(b.tree, a.tree, 'a same-size edit is caught');
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  t.equal((await snaps.take('user_t', 'sess_e')).tree, a.tree, 'back to the first content: the first tree');
  symlinkSync('a.txt', join(dir, 'link'));
  t.not((await snaps.take('user_t', 'sess_e')).tree, a.tree, 'a new symlink is caught');

  // Back to the empty tree: everything made since goes.
  await snaps.restore('user_t', 'sess_e', EMPTY_TREE);
  t.same(readdirSync(dir), []);
  t.equal((await snaps.take('user_t', 'sess_e')).tree, EMPTY_TREE);
  await snaps.restore('user_t', 'sess_e', b.tree);
  t.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'two\n', 'restored after the shortcut');
});

t.test('a session folder that is missing or empty is the empty tree without being opened; one that is a link is never followed', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-snaps-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const snaps = new Snapshots(root, { fileLimit: 1 << 20 });
  t.same(await snaps.take('user_t', 'sess_m'), { tree: EMPTY_TREE, files: 0, skipped: [] }, 'missing: the empty tree');
  t.notOk(existsSync(join(root, 'user_t', 'sess_m')), 'and the folder is not made for it');

  const dir = join(root, 'user_t', 'sess_m');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  const a = await snaps.take('user_t', 'sess_m');
  t.equal(a.files, 1);
  rmSync(join(dir, 'a.txt'));
  t.equal((await snaps.take('user_t', 'sess_m')).tree, EMPTY_TREE, 'emptied: the empty tree');
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  t.equal((await snaps.take('user_t', 'sess_m')).tree, a.tree, 'the same file again: the same tree as before');

  // The sandbox can write the user folder: a session folder swapped for a link to files elsewhere
  // is refused (the plain read that finds it non-empty hands over to the verified open).
  const outside = join(root, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'not yours\n');
  rmSync(dir, { recursive: true });
  symlinkSync(outside, dir);
  await t.rejects(snaps.take('user_t', 'sess_m'), /symbolic link/, 'a linked session folder is not snapshotted');
});

t.test("files a workspace's .gitignore hides are snapshotted and restored too; heavy folders and skipped files still are not", async (t) => {
  const { dir, snaps } = store(t, 1000);
  writeFileSync(join(dir, '.gitignore'), '*.log\nbuild/\nnode_modules/\n');
  writeFileSync(join(dir, 'app.log'), 'first log\n');
  mkdirSync(join(dir, 'build', 'node_modules', 'dep'), { recursive: true });
  writeFileSync(join(dir, 'build', 'out.js'), 'built 1\n');
  writeFileSync(join(dir, 'build', 'node_modules', 'dep', 'index.js'), 'heavy\n');
  mkdirSync(join(dir, 'node_modules', 'x'), { recursive: true });
  writeFileSync(join(dir, 'node_modules', 'x', 'i.js'), 'heavy\n');
  writeFileSync(join(dir, 'big.log'), 'x'.repeat(2000));
  const snap = await snaps.take('user_t', 'sess_t');
  t.equal(snap.files, 3, '.gitignore, app.log and build/out.js: every file a user made');
  t.same(snap.skipped.map((s) => s.path), ['big.log'], 'the file over the limit is listed, not lost silently');
  const listed = (await snaps.files('user_t', 'sess_t', snap.tree)).map((f) => f.path).sort();
  t.same(listed, ['.gitignore', 'app.log', 'build/out.js']);

  rmSync(join(dir, 'app.log'));
  writeFileSync(join(dir, 'build', 'out.js'), 'built 2\n');
  writeFileSync(join(dir, 'later.log'), 'made after the checkpoint\n');
  const later = await snaps.take('user_t', 'sess_t');
  t.equal(later.files, 3, 'the deleted log is gone from the next snapshot, the new one is in');
  await snaps.restore('user_t', 'sess_t', snap.tree);
  t.equal(readFileSync(join(dir, 'app.log'), 'utf8'), 'first log\n', 'an ignored file comes back');
  t.equal(readFileSync(join(dir, 'build', 'out.js'), 'utf8'), 'built 1\n', 'an ignored folder is restored');
  t.notOk(existsSync(join(dir, 'later.log')), 'an ignored file made later is removed');
  t.ok(existsSync(join(dir, 'node_modules', 'x', 'i.js')) && existsSync(join(dir, 'build', 'node_modules', 'dep', 'index.js')), 'heavy folders are left as they are');
  await snaps.restore('user_t', 'sess_t', later.tree);
  t.equal(readFileSync(join(dir, 'build', 'out.js'), 'utf8'), 'built 2\n');
  t.notOk(existsSync(join(dir, 'app.log')));
  t.equal(readFileSync(join(dir, 'later.log'), 'utf8'), 'made after the checkpoint\n');
});

t.test('a folder with its own repository (a clone, git init in a subfolder): its files are snapshotted and restored like any other', async (t) => {
  const { dir, snaps } = store(t);
  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.email=a@b', '-c', 'user.name=a', ...args], { cwd, stdio: 'ignore' });
  mkdirSync(join(dir, 'clone', 'src'), { recursive: true });
  writeFileSync(join(dir, 'clone', 'src', 'main.c'), 'int main() { return 0; }\n');
  git(join(dir, 'clone'), 'init', '-q');
  git(join(dir, 'clone'), 'add', '.');
  git(join(dir, 'clone'), 'commit', '-qm', 'first');
  mkdirSync(join(dir, 'fresh'));
  writeFileSync(join(dir, 'fresh', 'notes.md'), 'no commit yet\n');
  git(join(dir, 'fresh'), 'init', '-q');
  writeFileSync(join(dir, 'top.txt'), 'top\n');
  const snap = await snaps.take('user_t', 'sess_t');
  t.same(snap.skipped, [], 'nothing skipped, no error');
  t.same((await snaps.files('user_t', 'sess_t', snap.tree)).map((f) => f.path).sort(), ['clone/src/main.c', 'fresh/notes.md', 'top.txt'], 'their files, not a link, and not their .git');

  writeFileSync(join(dir, 'clone', 'src', 'main.c'), 'edited\n');
  writeFileSync(join(dir, 'clone', 'src', 'new.c'), 'new\n');
  rmSync(join(dir, 'fresh', 'notes.md'));
  const later = await snaps.take('user_t', 'sess_t');
  t.same((await snaps.files('user_t', 'sess_t', later.tree)).map((f) => f.path).sort(), ['clone/src/main.c', 'clone/src/new.c', 'top.txt'], 'edits, new and deleted files inside them are caught');
  t.same(later.skipped, [], 'an emptied one is no error either');
  await snaps.restore('user_t', 'sess_t', snap.tree);
  t.equal(readFileSync(join(dir, 'clone', 'src', 'main.c'), 'utf8'), 'int main() { return 0; }\n', 'restored');
  t.notOk(existsSync(join(dir, 'clone', 'src', 'new.c')), 'a file made later is removed');
  t.equal(readFileSync(join(dir, 'fresh', 'notes.md'), 'utf8'), 'no commit yet\n');
  t.ok(existsSync(join(dir, 'clone', '.git', 'HEAD')) && existsSync(join(dir, 'fresh', '.git', 'HEAD')), 'their .git folders are left as they are');
  await snaps.restore('user_t', 'sess_t', later.tree);
  t.equal(readFileSync(join(dir, 'clone', 'src', 'new.c'), 'utf8'), 'new\n');
});

t.test('links are stored and restored as links, never followed; the executable bit is kept; whatever stands in the way is replaced', async (t) => {
  const { root, dir, snaps } = store(t);
  const outside = mkdtempSync(join(tmpdir(), 'agentsvc-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  writeFileSync(join(outside, 'host.txt'), 'host\n');
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'a.txt'), 'a\n');
  writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  symlinkSync('sub/a.txt', join(dir, 'rel-link'));
  symlinkSync(outside, join(dir, 'out-link'));
  const snap = await snaps.take('user_t', 'sess_t');
  const listed = (await snaps.files('user_t', 'sess_t', snap.tree)).map((f) => f.path).sort();
  t.same(listed, ['out-link', 'rel-link', 'run.sh', 'sub/a.txt'], 'the link to a host folder is one entry, not its files');

  // The user replaces the folder with a link to the host folder and the links with files.
  rmSync(join(dir, 'sub'), { recursive: true });
  symlinkSync(outside, join(dir, 'sub'));
  rmSync(join(dir, 'rel-link'));
  writeFileSync(join(dir, 'rel-link'), 'now a file\n');
  rmSync(join(dir, 'run.sh'));
  mkdirSync(join(dir, 'run.sh'));
  t.equal(await snaps.restore('user_t', 'sess_t', snap.tree), 4);
  t.same(readdirSync(outside), ['host.txt'], 'nothing written through the link in the way');
  t.notOk(lstatSync(join(dir, 'sub')).isSymbolicLink(), 'sub/ is a folder again');
  t.equal(readFileSync(join(dir, 'sub', 'a.txt'), 'utf8'), 'a\n');
  t.equal(readlinkSync(join(dir, 'rel-link')), 'sub/a.txt', 'a link comes back as the same link');
  t.equal(readlinkSync(join(dir, 'out-link')), outside);
  t.equal(statSync(join(dir, 'run.sh')).mode & 0o111, 0o111, 'executable again');

  // A rewind into a session folder that went: made, every file written.
  rmSync(dir, { recursive: true });
  t.equal(await snaps.restore('user_t', 'sess_t', snap.tree), 4);
  t.equal(readFileSync(join(root, 'user_t', 'sess_t', 'sub', 'a.txt'), 'utf8'), 'a\n');
});
