import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { EMPTY_TREE, Snapshots } from '../../src/timetravel/snapshots.js';

/**
 * The snapshot store keeps no ref per snapshot and packs in the background (geometric roll-ups of
 * loose objects and small packs): every tree a checkpoint names must survive that, exactly.
 */
t.test('packing keeps every snapshot: early and middle trees restore exactly after roll-ups', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-snaps-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'user_t', 'sess_t');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const snaps = new Snapshots(root, { fileLimit: 1 << 20 });
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
  // Each pack run rolls loose objects and the small packs into one (geometric, factor 16): the
  // pack made at 64 loose objects and the one made at idle are at most two.
  t.ok(Number(/^packs: (\d+)$/m.exec(count)?.[1]) <= 2, `at most two packs: ${count}`);
  t.notOk(existsSync(join(gitDir, 'refs', 'snapshots')), 'no ref per snapshot');
  t.equal(execFileSync('git', [`--git-dir=${gitDir}`, 'config', 'gc.auto'], { encoding: 'utf8' }).trim(), '0', 'the store never gcs on its own');

  t.equal(await snaps.restore('user_t', 'sess_t', first.tree), 1);
  t.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'one\n');
  t.notOk(existsSync(join(dir, 'log', 'notes.txt')), 'a file made later is removed');
  await snaps.restore('user_t', 'sess_t', trees[19]);
  t.equal(readFileSync(join(dir, 'log', 'notes.txt'), 'utf8'), notes.split('\n').slice(0, 20).join('\n') + '\n', 'a middle version, byte for byte');
  await snaps.restore('user_t', 'sess_t', trees[39]);
  t.equal(readFileSync(join(dir, 'log', 'notes.txt'), 'utf8'), notes);
  t.same(readdirSync(dir).sort(), ['a.txt', 'log']);
  await snaps.remove('user_t', 'sess_t');
  t.notOk(existsSync(gitDir), 'removed with the session');
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
